// Checks attnwalk's tokenizer.json reader against expected ids (tokenizer_json_vs_npm.mjs):
// every string's ids equal, and the tokens' text joined equals the reference's decode.
// Usage: tokenizer_oracle EXPECTED.json ...
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "attnwalk/io/tokenizer.hpp"

int main(int argc, char** argv) {
    int failed = 0;
    for (int a = 1; a < argc; ++a) {
        std::ifstream in(argv[a]);
        std::stringstream text;
        text << in.rdbuf();
        const nlohmann::json doc = nlohmann::json::parse(text.str());
        const auto tok = attnwalk::load_tokenizer_json(doc.at("tokenizer").get<std::string>());
        std::size_t same = 0, total = 0;
        for (const auto& c : doc.at("cases")) {
            ++total;
            const std::string s = c.at("text").get<std::string>();
            const auto want = c.at("ids").get<std::vector<std::size_t>>();
            const auto got = tok->encode(s);
            std::string decoded;
            for (std::size_t id : got) decoded += tok->decode(id);
            const bool ok = got == want && decoded == c.at("decoded").get<std::string>();
            if (ok) {
                ++same;
                continue;
            }
            if (++failed <= 20) {
                std::cout << "DIFFERENT for " << nlohmann::json(s).dump() << "\n  reference ";
                for (std::size_t id : want) std::cout << id << ' ';
                std::cout << "\n  attnwalk  ";
                for (std::size_t id : got) std::cout << id << ' ';
                std::cout << "\n  decoded   " << nlohmann::json(decoded).dump() << " vs " << c.at("decoded").dump() << "\n";
            }
        }
        std::cout << argv[a] << ": " << same << " of " << total << " strings as @huggingface/tokenizers gives them\n";
    }
    return failed ? 1 : 0;
}
