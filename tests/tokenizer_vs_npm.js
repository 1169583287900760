// attnwalk's GPT-2 tokenizer against the npm package gpt-3-encoder 1.1.4 (the reference
// the issue names) on a few hundred strings: fixed tricky ones and seeded random mixes of
// letters, digits, punctuation, contractions, whitespace runs, accents, CJK and emoji.
// Usage: node tokenizer_vs_npm.js ATTNWALK_BINARY PATH_TO_gpt-3-encoder
const { execFileSync } = require("child_process");
const [binary, pkg] = process.argv.slice(2);
const { encode } = require(pkg);

const fixed = [
  "Hello world is", "Hello, world!", "It's", "It's a cat's toy; they're here, we've been, I'm sure, you'll see, he'd go.",
  "  leading spaces", "trailing spaces   ", "tabs\tand\nnewlines\n\n\nend", "multiple   spaces  between", " ", "\n", "a\n b",
  "numbers 123 4567 89012 3.14159 1,000,000", "x2y3z4", "CamelCaseWords and snake_case_words", "e-mail@example.com",
  "Ünïcödé çåfé naïve résumé", "東京は日本の首都です", "🤖🚀 emoji 👍🏽", "Ελληνικά και русский", "'''", "''s", "'S 'T",
  "<|endoftext|>", "\u00a0non-breaking\u00a0space", "zero\u200bwidth", "٣٤٥ Arabic-Indic digits", "½ ¾ Ⅳ ²",
  "Why?!... (yes) [no] {maybe} <tag/>", "—dash– and “quotes”", "\r\n windows line", "  \n  \n  x",
];
let seed = 12345;
const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
const parts = ["the", " cat", "'s", "'re", " 42", "7", ",", ".", "!", " ", "  ", "\n", "\t", "é", "東", "🤖", "-", "_", "''",
               "Hello", " World", "ß", "İ", "0.5", "'d", "'ll", "ﬁ", "\u00a0", "a", "Z", "$", "%", "“", "…"];
const strings = fixed.slice();
while (strings.length < 240) {
  let s = "";
  const n = 1 + rand(12);
  for (let i = 0; i < n; i++) s += parts[rand(parts.length)];
  strings.push(s);
}
let failed = 0;
// Hugging Face's GPT-2 tokenizer (which attnwalk follows) reads <|endoftext|> as its one
// special token, 50256; gpt-3-encoder spells it out: the parts between are compared.
const hf = (s) => s.split("<|endoftext|>").map((part) => (part ? encode(part) : [])).reduce((a, b) => a.concat([50256], b));
for (const s of strings) {
  const expected = hf(s);
  const out = execFileSync(binary, ["tokenize", "--text", s, "--json"], { encoding: "utf8" });
  const got = JSON.parse(out).steps[0].data;
  if (JSON.stringify(got) !== JSON.stringify(expected)) {
    failed++;
    console.log("DIFFERENT for " + JSON.stringify(s) + ":\n  npm      " + JSON.stringify(expected) + "\n  attnwalk " + JSON.stringify(got));
  }
}
console.log(`${strings.length - failed} of ${strings.length} strings tokenized as gpt-3-encoder does`);
process.exit(failed ? 1 : 0);
