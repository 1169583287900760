"""Small tokenizer.json files of their own, in the formats the real ones use: byte-level BPE
(Llama 3, Qwen, OLMo, SmolLM3, gpt-oss, DeepSeek-V3, Qwen3-Next) and SentencePiece-style BPE
(Gemma), trained on a short corpus, with an encoder for the goldens' lower-case texts."""


CORPUS = ("the cat sat on the mat and the dog sat on the log while the bird sang in the tree "
          "attention is what the model pays to the tokens before it and the weights sum to one ") * 3
LLAMA3_SPLIT = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN_SPLIT = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"


def byte_chars():  # GPT-2's bytes_to_unicode
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def train_bpe(words, base, n_merges):
    """Plain BPE training: the most frequent adjacent pair, first seen wins ties."""
    words = [list(w) for w in words]
    vocab, merges = list(base), []
    for _ in range(n_merges):
        counts = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        a, b = max(counts, key=lambda p: counts[p])
        merges.append((a, b))
        vocab.append(a + b)
        for w in words:
            i = 0
            while i + 1 < len(w):
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [a + b]
                i += 1
    return vocab, merges


def bpe_encode(piece, ranks, vocab):
    """Merges by rank, lowest first (the pieces these goldens use are lower-case words)."""
    w = list(piece)
    while len(w) > 1:
        pairs = [(ranks.get((a, b), 1 << 30), i) for i, (a, b) in enumerate(zip(w, w[1:]))]
        rank, i = min(pairs)
        if rank == 1 << 30:
            break
        w[i:i + 2] = [w[i] + w[i + 1]]
    return [vocab[t] for t in w]


def tiny_tokenizer(kind, size, family):
    """tokenizer.json and an encoder for simple lower-case text (for the goldens)."""
    if kind == "byte_level":
        bc = byte_chars()
        specials = ["<|begin_of_text|>", "<|end_of_text|>"] if family == "llama" else ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        words = ["".join(bc[b] for b in (("" if i == 0 else " ") + w).encode()) for i, w in enumerate(CORPUS.split())]
        vocab, merges = train_bpe(words, [bc[b] for b in range(256)], size - 256 - len(specials))
        ids = {t: i for i, t in enumerate(vocab)}
        added = [{"id": len(vocab) + k, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                  "special": True} for k, t in enumerate(specials)]
        doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
               "normalizer": {"type": "NFC"} if family == "qwen3" else None,
               "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                   {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT if family == "llama" else QWEN_SPLIT}, "behavior": "Isolated", "invert": False},
                   {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
               "post_processor": {"type": "Sequence", "processors": [
                   {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}] + ([
                   {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                                                            {"Sequence": {"id": "A", "type_id": 0}}],
                    "pair": [], "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [len(vocab)],
                                                                          "tokens": ["<|begin_of_text|>"]}}}] if family == "llama" else [])},
               "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
               "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
                         "fuse_unk": False, "byte_fallback": False, "ignore_merges": family == "llama", "vocab": ids,
                         "merges": [a + " " + b for a, b in merges] if family == "llama" else [[a, b] for a, b in merges]}}
        ranks = {m: r for r, m in enumerate(merges)}

        def encode(text):  # lower-case words and single spaces: " word" pieces
            out = [len(vocab)] if family == "llama" else []
            for i, w in enumerate(text.split(" ")):
                piece = "".join(bc[b] for b in (("" if i == 0 else " ") + w).encode())
                out += [ids[piece]] if family == "llama" and piece in ids else bpe_encode(piece, ranks, ids)
            return out
        return doc, encode
    # SentencePiece-style (Gemma): ▁ for a space, <unk> for what the vocabulary lacks
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    chars = ["▁"] + sorted(set(CORPUS.replace(" ", "")))
    words = [("▁" if i else "") + w for i, w in enumerate(CORPUS.split())]
    vocab, merges = train_bpe(words, specials + chars, size - len(specials) - len(chars))
    ids = {t: i for i, t in enumerate(vocab)}
    added = [{"id": k, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
             for k, t in enumerate(specials)]
    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
           "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": False},
           "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                                                                      {"Sequence": {"id": "A", "type_id": 0}}],
                              "pair": [], "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]}}},
           "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                                                         {"type": "ByteFallback"}, {"type": "Fuse"}]},
           "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None, "end_of_word_suffix": None,
                     "fuse_unk": True, "byte_fallback": False, "ignore_merges": False, "vocab": ids, "merges": [[a, b] for a, b in merges]}}
    ranks = {m: r for r, m in enumerate(merges)}
    return doc, lambda text: [2] + bpe_encode(text.replace(" ", "▁"), ranks, ids)
