// attnwalk gpt2: a pretrained GPT-2 from a safetensors file, on token ids: every layer
// (one in full, the others as summaries) and the most likely next tokens.
#include <memory>

#include <cmath>
#include <filesystem>

#include "attnwalk/io/bpe.hpp"
#include "attnwalk/io/gguf.hpp"
#include "attnwalk/io/tokenizer.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/model/family.hpp"
#include "attnwalk/model/model.hpp"
#include "commands.hpp"
#include "data_files.hpp"
#include "render/heatmap.hpp"

namespace attnwalk::app {

namespace {

// "15496,995,318" -> ids
std::vector<std::size_t> parse_ids(const std::string& text) {
    std::vector<std::size_t> ids;
    for (const std::string& item : comma_items(text)) {  // the empty last one too ("1,2,")
        const auto start = item.find_first_not_of(' '), end = item.find_last_not_of(' ');
        const std::string word = start == std::string::npos ? "" : item.substr(start, end - start + 1);
        if (word.empty() || word.find_first_not_of("0123456789") != std::string::npos || word.size() > 9)
            throw UsageError("--ids: '" + word + "' is not a token id (ids are whole numbers, separated by commas)");
        ids.push_back(static_cast<std::size_t>(std::stoul(word)));
    }
    return ids;
}

// A tokenizer from --tokenizer: a tokenizer.json file, a folder holding one, a GGUF file, or a folder
// with GPT-2's encoder.json and vocab.bpe. Without it, GPT-2's in data/gpt2 here, else the
// source tree's. `use`: a prompt given as ids needs a tokenizer.json's names alone.
std::shared_ptr<const Tokenizer> load_tokenizer(const std::optional<std::string>& given, double memory_budget, TokenizerUse use) {
    namespace fs = std::filesystem;
    if (given) {
        std::error_code ec;  // a link loop or an unreadable folder: the reader below says so
        const bool folder = fs::is_directory(*given, ec);
        if (folder && fs::exists(fs::symlink_status(fs::path(*given) / "tokenizer.json", ec)))
            return load_tokenizer_json((fs::path(*given) / "tokenizer.json").string(), memory_budget, use);
        if (!folder && fs::path(*given).extension() == ".json") return load_tokenizer_json(*given, memory_budget, use);
        if (!folder && GgufFile::is_gguf(*given)) {  // its tokenizer.ggml.*
            if (auto t = load_gguf_tokenizer(*given, memory_budget, use)) return t;
            throw UsageError(*given + " is a GGUF file without a tokenizer (no tokenizer.ggml.model)");
        }
        return Bpe::load(*given, use);
    }
    if (const auto dir = shipped_file("gpt2/encoder.json")) return Bpe::load(fs::path(*dir).parent_path().string(), use);
    throw UsageError("GPT-2's tokenizer files (encoder.json, vocab.bpe) are not in data/gpt2 (looked in " + shipped_places() +
                     "): give --tokenizer DIR (see docs/models.md)");
}

}  // namespace

ATTNWALK_COMMAND(tokenize) {
    CLI::App* sub = cli.add_subcommand("tokenize", lesson("tokenize").summary);
    sub->footer("Examples:\n"
                "  attnwalk tokenize --text \"Hello world is\"      # 15496 995 318\n"
                "  attnwalk tokenize --text \"It's 2026, isn't it?\" --json\n"
                "  attnwalk tokenize --tokenizer tests/data/models/tiny_llama --text \"Hello world\"   # its tokenizer.json\n");
    add_shell_options(OptionBuilder(*sub), shell, false, InputKind::prompt);
    auto dir = std::make_shared<std::optional<std::string>>();
    sub->add_option("--tokenizer", *dir, "A tokenizer.json, a folder with one, or a folder with encoder.json and vocab.bpe (default: data/gpt2)")
        ->check(non_empty());
    sub->callback([&shell, dir] {
        shell.headline = headline_of(lesson("tokenize"));
        shell.walk = [&shell, dir] {
            if (!shell.sentence) throw UsageError("tokenize needs --text \"...\"");
            check_cost(shell, tokenize_cost(shell.sentence->size(), nullptr));  // the text's own share first: before the tables are read
            const auto tokenizer = load_tokenizer(*dir, parse_bytes(shell.max_memory), TokenizerUse::encode);
            check_cost(shell, tokenize_cost(shell.sentence->size(), tokenizer.get()));
            return walk_tokenize(*tokenizer, *shell.sentence);
        };
    });
}

namespace {

// What the model commands share: the prompt, the layer and head shown, the view, the
// candidates and generation.
struct ModelOptions {
    std::string model;
    std::optional<std::string> ids, tokenizer, explain, ablate, start_recent;
    std::optional<std::string> answer, wrong, corrupt, corrupt_ids;  // circuits: the metric's tokens, the corrupted prompt
    std::optional<std::size_t> heads;
    bool no_mmap = false;  // the weights moved into memory after the load (hold_weights_in_memory)
    ModelSpec spec;  // the options' defaults are the library's
    // Whether a text besides the prompt goes through the tokenizer: the corrupted prompt, an answer not given as #ID.
    bool encodes() const {
        const auto text = [](const std::optional<std::string>& t) { return t && !(t->size() > 1 && (*t)[0] == '#'); };
        return corrupt || text(answer) || text(wrong);
    }
};

// `rope`: the model's positions may be rotary (model folders; GPT-2 learns its positions).
void add_model_options(CLI::App& sub, ModelOptions& o, bool rope) {
    CLI::Option* ids_option = sub.add_option("--ids", o.ids, "The prompt as token ids, separated by commas (or --text)");
    ids_option->excludes(sub.get_option("--text"));
    add_counted_option(OptionBuilder(sub), "--layer", o.spec.layer, "The layer whose attention is shown in full, counted from 1");
    add_counted_option(OptionBuilder(sub), "--head", o.spec.head, "Only this head's matrices in the layer shown, counted from 1 (default every head); the head --explain writes out");
    add_explain_option(OptionBuilder(sub), o.explain);
    sub.add_flag("--all-layers", o.spec.all_layers, "Every layer's steps in full (default: summaries but for --layer)");
    CLI::Option* view = sub.add_flag("--view", o.spec.view, "The model view: every layer's heads as small heatmaps, and numbers per head");
    sub.add_option("--sort", o.spec.sort, "With --view, rank the heads by entropy, max_weight, first_token, previous_token or diagonal")
        ->check(CLI::IsMember(head_stat_names()))
        ->needs(view);
    CLI::Option* generate = sub.add_option("--generate", o.spec.generate, "Then generate N tokens greedily, each through a KV cache, checked against no cache")
                                ->check(whole_number(1));
    sub.add_flag("--no-mmap", o.no_mmap,
                 "Copy the weights into the process's own memory (huge pages) once loaded, rather than read them from the mapped file "
                 "at each use: a copy of the files at the start, then forwards that do not wait on mapped file pages; for many "
                 "forwards in one run, as a long --generate (docs/performance.md, section 31). The same numbers either way. A GGUF "
                 "file's weights are in the process's own memory already (copied when loaded, or dequantized when first used): nothing more to do");
    if (rope)
        sub.add_option("--streaming-cache", o.start_recent,
                       "StreamingLLM's cache for --generate: S,R keeps the first S tokens (the sinks) and the R most recent, keys rotated at "
                       "their place in the cache; each next token's distribution against the full cache (a RoPE model without sliding layers)")
            ->check(non_empty())
            ->needs(generate);
    sub.add_option("--ablate", o.ablate,
                   "Switch heads off: L.H[,L.H…] (counted from 1; L.* every head of layer L), their outputs zeroed before the output "
                   "projection; shows the change of the next token's logit and probability and of the prompt's loss")
        ->check(non_empty());
    add_counted_option(OptionBuilder(sub), "--ablate-each", o.spec.ablate_each, "Each head of layer L switched off alone: a table of the same changes");
    CLI::Option* roles = sub.add_option("--head-roles", o.spec.roles,
                                        "Head roles: N random ids run twice; per layer and head the induction, previous-token and "
                                        "duplicate-token scores (as TransformerLens computes them)")
                             ->check(whole_number(2));
    sub.add_option("--roles-seed", o.spec.roles_seed, "torch.manual_seed(S) before the random ids of --head-roles")
        ->check(whole_number(0))->needs(roles)->capture_default_str();
    sub.add_flag("--rollout", o.spec.rollout,
                 "Attention rollout (Abnar & Zuidema): the heads averaged, + I, rows normalised, multiplied through the layers: how much "
                 "each token draws on each input token");
    sub.add_flag("--logit-lens", o.spec.logit_lens,
                 "The logit lens: every layer's residual stream through the final norm and the unembedding (top token, its probability, "
                 "the rank of the final prediction)");
    sub.add_flag("--attribution", o.spec.attribution,
                 "Direct logit attribution: each head's, MLP's, embedding's and bias's share of the answer's logit at the last position (or of "
                 "--answer − --wrong), through the final norm with its scale frozen (docs/circuits.md)");
    CLI::Option* circuits = sub.add_flag("--circuits", o.spec.circuits,
                                         "A head's circuits (--layer L --head H): its QK and OV tables over the prompt's tokens through the "
                                         "embedding and unembedding, and the OV copying score from its eigenvalues; --steps 'circuit*' shows them alone "
                                         "(docs/circuits.md)");
    if (rope)
        sub.add_option("--offset", o.spec.circuit_offset, "With --circuits on a RoPE layer: the QK table again with the query this many positions after the key")
            ->check(whole_number(0))
            ->needs(circuits)
            ->capture_default_str();
    CLI::Option* corrupt = sub.add_option("--corrupt", o.corrupt,
                                          "Activation patching: a corrupted prompt of as many tokens; the stream, each head and each layer's "
                                          "attention and MLP patched from the clean run into it, one at a time (docs/circuits.md)")
                               ->check(non_empty());
    sub.add_option("--corrupt-ids", o.corrupt_ids, "The corrupted prompt as token ids, separated by commas")->check(non_empty())->excludes(corrupt);
    sub.add_option("--answer", o.answer,
                   "The token whose logit --attribution splits and patching measures: its text (one token, \" Mary\") or #ID (default: the "
                   "model's top token)")
        ->check(non_empty());
    sub.add_option("--wrong", o.wrong, "Measure the logit difference --answer − --wrong instead (text or #ID); without it patching measures the answer's log-probability")
        ->check(non_empty());
    sub.add_option("--top-k", o.spec.top_k, "Next-token candidates shown")->check(whole_number(1))->capture_default_str();
    sub.add_option("--temperature", o.spec.temperature, "Divide the logits by T before the softmax")
        ->check(positive_float32("T"))  // the trace keeps it as float32
        ->capture_default_str();
    sub.add_option("--top-p", o.spec.top_p, "Nucleus sampling: the smallest set of tokens with probability ≥ P")
        ->check(number_check("P", [](double v) { return v > 0.0 && v <= 1.0; }, "must be in (0, 1]"));
}

std::vector<std::string> model_headline(const ModelSpec& spec) { return headline_of(lesson("model"), spec.view); }

// The prompt's ids (--text through the tokenizer, or --ids), each estimate checked before
// its work, then the model walk; `tokenizer` (may be null) also names the tokens.
// --ablate 2.3,4.*: (layer, head) pairs counted from 1; "*" is every head of the layer.
std::vector<std::pair<std::size_t, std::optional<std::size_t>>> parse_ablation(const std::string& text) {
    std::vector<std::pair<std::size_t, std::optional<std::size_t>>> out;
    const auto number = [&](const std::string& t, const std::string& item) {
        if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos || std::stoul(t) == 0)
            throw UsageError("--ablate takes L.H or L.* counted from 1, separated by commas (2.3,4.*), not '" + item + "'");
        return static_cast<std::size_t>(std::stoul(t) - 1);
    };
    for (const std::string& item : comma_items(text)) {
        const std::size_t at = item.find('.');
        if (at == std::string::npos) number("", item);
        const std::size_t layer = number(item.substr(0, at), item);
        const std::string head = item.substr(at + 1);
        out.emplace_back(layer, head == "*" ? std::nullopt : std::optional<std::size_t>(number(head, item)));
    }
    return out;
}

Trace walk_prompt(const Shell& shell, const ModelOptions& o, const Model& model, const Tokenizer* tokenizer) {
    if (shell.sentence) check_cost(shell, tokenize_cost(shell.sentence->size(), tokenizer));
    const std::vector<std::size_t> ids = shell.sentence ? tokenizer->encode(*shell.sentence) : parse_ids(*o.ids);
    if (ids.empty()) throw UsageError("--text has no tokens");
    ModelSpec spec = o.spec;
    spec.tokenizer = tokenizer;
    const std::vector<std::string> tokens = token_labels(ids, tokenizer);
    if (o.explain) spec.explain = parse_cell(*o.explain, tokens);
    if (o.ablate) spec.ablate = parse_ablation(*o.ablate);
    const auto one_token = [&](const std::string& option, const std::string& text) -> std::size_t {
        if (text.size() > 1 && text[0] == '#' && text.size() <= 10 && text.find_first_not_of("0123456789", 1) == std::string::npos)
            return static_cast<std::size_t>(std::stoul(text.substr(1)));
        if (!tokenizer) throw UsageError(option + " '" + text + "': without a tokenizer, give the token as #ID");
        const std::vector<std::size_t> t = tokenizer->encode(text);
        if (t.size() != 1)
            throw UsageError(option + " '" + text + "' is " + std::to_string(t.size()) + " tokens, and the metric reads one (mind the leading space: \" Mary\"), or give #ID");
        return t.front();
    };
    if ((o.answer || o.wrong) && !spec.attribution && !o.corrupt && !o.corrupt_ids)
        throw UsageError(std::string(o.wrong ? "--wrong" : "--answer") + " names a token the circuits measure: it needs --attribution or --corrupt");
    if (spec.circuits && !spec.head) throw UsageError("--circuits shows one head's circuits: give --head H (and --layer L, default 1)");
    if (o.answer) spec.answer = one_token("--answer", *o.answer);
    if (o.wrong) spec.wrong = one_token("--wrong", *o.wrong);
    if (o.corrupt) {
        if (!tokenizer) throw UsageError("--corrupt needs a tokenizer: give the corrupted prompt as --corrupt-ids");
        spec.corrupt = tokenizer->encode(*o.corrupt);
        if (spec.corrupt.empty()) throw UsageError("--corrupt has no tokens");
    }
    if (o.corrupt_ids) spec.corrupt = parse_ids(*o.corrupt_ids);
    if (o.start_recent) {  // S,R: two whole numbers
        const std::string& t = *o.start_recent;
        const std::vector<std::string> parts = comma_items(t);
        const auto whole = [&](const std::string& part) {
            if (parts.size() != 2 || part.empty() || part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos)
                throw UsageError("--streaming-cache takes START,RECENT, two whole numbers (4,64), not '" + t + "'");
            return static_cast<std::size_t>(std::stoul(part));
        };
        spec.start_recent = std::make_pair(whole(parts.front()), whole(parts.back()));
        if (spec.start_recent->second == 0) throw UsageError("--streaming-cache: RECENT must be at least 1 (the newest token)");
    }
    check_prompt(*model, ids);  // the context is the limit that means something: before the memory estimate
    check_cost(shell, model_walk_cost(model, ids.size(), spec, shell.recording));
    if (shell.svg) {  // the picture's size, before the walk: the shown layer's weights, or every layer's
        const ModelInfo& info = info_of(*model);
        // svg_of_weights draws the model view's grid unless --svg-step names another step
        const bool grid = shell.svg_step == "attention_grid" || (shell.svg_step.empty() && o.spec.view);
        const std::size_t layers = grid ? info.layers : 1, heads = o.spec.head && !grid ? 1 : info.heads, T = ids.size();
        check_svg_cells(static_cast<double>(layers) * static_cast<double>(heads) * static_cast<double>(T) * static_cast<double>(T),
                        (grid ? std::to_string(layers) + " layers × " : std::string()) + std::to_string(heads) + " head" + (heads == 1 ? "" : "s") +
                            " × " + std::to_string(T) + " × " + std::to_string(T) + " tokens",
                        grid ? "draw the shown layer's weights with --svg-step weights, or use fewer tokens"
                             : "draw one head with --head, or use fewer tokens");
    }
    return walk_model(model, ids, tokens, spec, shell.recording);
}

}  // namespace

ATTNWALK_COMMAND(model) {
    CLI::App* sub = cli.add_subcommand("model", lesson("model").summary);
    sub->footer("Examples:\n"
                "  attnwalk model --model tests/data/models/tiny_llama --text \"the cat sat on the mat\"   # its tokenizer.json\n"
                "  attnwalk model --model tests/data/models/tiny_gemma3 --text \"the cat sat on the mat\" --layer 2 --steps weights\n"
                "  attnwalk model --model tests/data/models/tiny_qwen3 --ids 3,1,4,1,5 --layer 2 --steps 'queries_normed,rope_angles,weights'\n"
                "  attnwalk model --model tests/data/models/tiny_gemma3 --ids 1,2,3,4,5,6,7,8 --view --compact\n"
                "  attnwalk model --model tests/data/models/tiny_olmo3 --text \"the cat sat on the mat\" --layer 1 --head 2 --explain 6,4\n"
                "  attnwalk model --model DIR --ids 1,2,3 --generate 4 --steps 'generated_ids,max_difference'\n"
                "  attnwalk model --model tests/data/gguf/tiny_qwen3_q8_0.gguf --text \"the cat sat\"   # a GGUF file (llama.cpp, Ollama, LM Studio)\n"
                "The family comes from config.json's model_type: " + supported_families() + ".\n"
                "See docs/families.md for where to get each family's folder.\n");
    add_shell_options(OptionBuilder(*sub), shell, true, InputKind::prompt);
    auto o = std::make_shared<ModelOptions>();
    sub->add_option("--model", o->model, "Hugging Face model folder (config.json, model.safetensors or its shards, tokenizer.json) or a GGUF file")
        ->required()
        ->check(non_empty());
    sub->add_option("--tokenizer", o->tokenizer, "Another tokenizer: a tokenizer.json or a folder with one (default: the model folder's)")
        ->check(non_empty());
    add_model_options(*sub, *o, true);
    sub->callback([&shell, o] {
        shell.headline = model_headline(o->spec);
        shell.walk = [&shell, o] {
            if (!o->ids && !shell.sentence) throw UsageError("model needs a prompt: --text \"...\" or --ids 1,2,3");
            const double budget = parse_bytes(shell.max_memory);
            if (shell.sentence) check_cost(shell, tokenize_cost(shell.sentence->size(), nullptr));  // the text's own share, before anything is read
            const Model model = load_model(o->model, budget);
            if (o->no_mmap) hold_weights_in_memory(*model);
            // the folder's tokenizer.json (or --tokenizer): needed for --text, else for labels
            // (then its merges are not kept)
            std::shared_ptr<const Tokenizer> tokenizer;
            const TokenizerUse use = shell.sentence || o->encodes() ? TokenizerUse::encode : TokenizerUse::decode;
            const std::string own = (std::filesystem::path(o->model) / "tokenizer.json").string();
            if (o->tokenizer) tokenizer = load_tokenizer(o->tokenizer, budget, use);
            else if (GgufFile::is_gguf(o->model)) {  // its tokenizer.ggml.*, when it has one
                tokenizer = load_gguf_tokenizer(o->model, budget, use);
                if (!tokenizer && shell.sentence) throw UsageError("the GGUF file has no tokenizer: give --tokenizer FILE, or the prompt as --ids");
            } else if (std::error_code ec; std::filesystem::exists(std::filesystem::symlink_status(own, ec))) tokenizer = load_tokenizer_json(own, budget, use);
            else if (shell.sentence)
                throw UsageError("the model folder has no tokenizer.json: give --tokenizer FILE, or the prompt as --ids");
            Trace trace = walk_prompt(shell, *o, model, tokenizer.get());
            trace.command = "model";
            return trace;
        };
    });
}

ATTNWALK_COMMAND(gpt2) {
    CLI::App* sub = cli.add_subcommand("gpt2", lesson("gpt2").summary);
    sub->footer("Examples:\n"
                "  attnwalk gpt2 --model model.safetensors --text \"Hello world is\"\n"
                "  attnwalk gpt2 --model model.safetensors --ids 15496,995,318          # the same prompt as ids\n"
                "  attnwalk gpt2 --model model.safetensors --ids 15496,995,318 --layer 6 --steps weights\n"
                "  attnwalk gpt2 --model model.safetensors --ids 15496,995 --top-k 10 --temperature 0.7\n"
                "  attnwalk gpt2 --model model.safetensors --text \"The cat sat\" --view --sort first_token --compact\n"
                "  attnwalk gpt2 --model model.safetensors --text \"Hello, my name is\" --generate 5 --steps 'step*.weights,generated_ids,max_difference'\n"
                "See docs/models.md for where to get GPT-2's weights.\n");
    add_shell_options(OptionBuilder(*sub), shell, true, InputKind::prompt);
    auto o = std::make_shared<ModelOptions>();
    sub->add_option("--model", o->model, "GPT-2 checkpoint in safetensors format (Hugging Face or nanoGPT names)")->required()->check(non_empty());
    sub->add_option("--tokenizer", o->tokenizer, "Directory with GPT-2's encoder.json and vocab.bpe (default: data/gpt2)")->check(non_empty());
    sub->add_option("--heads", o->heads, "Heads per layer (default: C/64, as every GPT-2 size)")->check(whole_number(1));
    add_model_options(*sub, *o, false);
    sub->callback([&shell, o] {
        shell.headline = model_headline(o->spec);
        shell.walk = [&shell, o] {
            if (!o->ids && !shell.sentence) throw UsageError("gpt2 needs a prompt: --text \"...\" or --ids 15496,995");
            const double budget = parse_bytes(shell.max_memory);
            if (shell.sentence) check_cost(shell, tokenize_cost(shell.sentence->size(), nullptr));  // the text's own share, before anything is read
            if (std::error_code ec; std::filesystem::is_directory(o->model, ec))
                throw UsageError("gpt2 reads one safetensors file, and " + o->model + " is a folder" +
                                 (std::filesystem::exists(std::filesystem::path(o->model) / "config.json", ec)
                                      ? ": a Hugging Face model folder is read by attnwalk model --model " + o->model
                                      : ": give its model.safetensors"));
            if (GgufFile::is_gguf(o->model))  // llama.cpp's GPT-2 (or another model) is a whole model: config, tokenizer, weights
                throw UsageError("gpt2 reads one safetensors file, and " + o->model + " is a GGUF file (llama.cpp's format): attnwalk model --model " +
                                 o->model + " reads it");
            Model model;
            try {
                model = load_gpt2(o->model, o->heads, budget);
            } catch (const MemoryBudgetError&) {
                throw;
            } catch (const UsageError& e) {  // the heads: C does not split into them
                throw UsageError(std::string(e.what()) + (o->heads ? "" : " with --heads H"));
            }
            if (o->no_mmap) hold_weights_in_memory(*model);
            std::shared_ptr<const Tokenizer> bpe;
            const TokenizerUse use = shell.sentence || o->encodes() ? TokenizerUse::encode : TokenizerUse::decode;
            if (shell.sentence || o->tokenizer) bpe = load_tokenizer(o->tokenizer, budget, use);
            if (!bpe && info_of(*model).vocab == 50257) {  // GPT-2's vocabulary: name the tokens when the files are at hand
                try {
                    bpe = load_tokenizer(std::nullopt, budget, use);
                } catch (const UsageError&) {
                }
            }
            Trace trace = walk_prompt(shell, *o, model, bpe.get());
            trace.command = "gpt2";
            return trace;
        };
    });
}

}  // namespace attnwalk::app
