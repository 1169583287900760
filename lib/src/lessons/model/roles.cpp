// Head roles: the induction, previous-token and duplicate-token scores of every head.
#include "model_walk.hpp"

namespace attnwalk::model_walk {

namespace {

// Head roles (TransformerLens's induction, previous-token and duplicate-token scores): a
// random sequence r of n ids, the model run on r + r, and per layer and head the mean of
// the attention pattern's diagonal at offset 1 − n (induction), −1 (previous) and −n
// (duplicate).
class AllWeights : public DecoderTap {
public:
    std::vector<Hyper> weights;
    bool keeps_attention(std::size_t) const override { return true; }
    void hook(std::size_t, HookId id, const Hooked& value) override {
        if (id == hooks::heads) weights.push_back(value.get<Forward>().weights);
    }
};

}  // namespace

void record_roles(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w) {
    const std::size_t n = spec.roles, V = w.config.vocab, L = w.config.layers, H = w.config.heads;
    Generator gen(spec.roles_seed);
    const std::size_t lo = V >= 10000 ? 1000 : 0, hi = V >= 10000 ? 10000 : V;  // torch.randint(lo, hi, (n,))
    std::vector<std::size_t> ids(n);
    for (std::size_t& id : ids) id = lo + gen.random() % (hi - lo);
    ids.insert(ids.end(), ids.begin(), ids.end());
    AllWeights tap;
    decoder_forward(w, ids, nullptr, &tap);
    rec.trace().set_param("roles_length", static_cast<ull>(n));
    rec.trace().set_param("roles_seed", static_cast<ull>(spec.roles_seed));
    rec.trace().set_param("roles_bos", false);
    rec.add_plain("roles_ids", "Head roles: " + std::to_string(n) + " random ids, twice", "r = randint(" + std::to_string(lo) + ", " + std::to_string(hi) + ", n); r + r",
                  integer_tensor({ids.begin(), ids.end()}, {2 * n}), {Axis::feature});
    rec.trace().steps.back().labels = token_labels(ids, spec.tokenizer);
    rec.trace().steps.back().note = "torch.manual_seed(" + std::to_string(spec.roles_seed) + "), torch.randint(" + std::to_string(lo) + ", " + std::to_string(hi) + ", (" +
                std::to_string(n) + ",)), no BOS: as TransformerLens's induction demo draws them.";
    const auto stripe = [&](std::ptrdiff_t offset) {  // mean of the diagonal at `offset` (below the main one: negative)
        Mat m = Mat::from_shape({L, H});
        const std::size_t T = 2 * n, down = static_cast<std::size_t>(-offset);
        for (std::size_t l = 0; l < L; ++l)
            for (std::size_t h = 0; h < H; ++h) {
                float s = 0.0f;
                for (std::size_t i = down; i < T; ++i) s += tap.weights[l](0, h, i, i - down);
                m(l, h) = s / static_cast<float>(T - down);
            }
        return m;
    };
    const std::ptrdiff_t N = static_cast<std::ptrdiff_t>(n);
    const Mat induction = stripe(1 - N), previous = stripe(-1), duplicate = stripe(-N);
    std::string blind;  // sliding layers whose window ends before n − 1 tokens back
    std::size_t window = 0;
    for (std::size_t l = 0; l < L && l < w.config.layer_specs.size(); ++l)
        if (const auto W = w.config.layer_specs[l].window; W && *W <= n - 1) {
            blind += (blind.empty() ? "" : ", ") + std::to_string(l + 1);
            window = *W;
        }
    // what rows spread evenly over the keys they see would give each diagonal, per layer (its window)
    const auto even = [&](std::size_t back) {
        std::vector<double> per_layer;
        for (std::size_t l = 0; l < L; ++l)
            per_layer.push_back(even_stripe(2 * n, true, l < w.config.layer_specs.size() ? w.config.layer_specs[l].window.value_or(0) : 0, back));
        return " Rows spread evenly over the keys they see would give " + layer_values(per_layer) + ".";
    };
    rec.add_plain("role_induction", "Induction score per layer and head", "mean_(i = n…2n) A[i, i − (n − 1)]", to_trace(induction), {Axis::layer, Axis::head})
        .note = "Rows " + std::to_string(n) + "…" + std::to_string(2 * n) + ", from the first run's last token on, each weighing the key n − 1 = " +
                std::to_string(n - 1) + " back: in the second run, the token after the current token's first occurrence. An induction head attends "
                "there (and copies it); near 1: an induction head." + even(n - 1) +
                (blind.empty() ? std::string()
                               : " Layer" + std::string(blind.find(',') == std::string::npos ? " " : "s ") + blind + " see only the last " +
                                     std::to_string(window) + " tokens (a sliding window): n − 1 = " + std::to_string(n - 1) +
                                     " back is out of their sight, so their induction and duplicate scores are 0 by construction.");
    rec.add_plain("role_previous", "Previous-token score per layer and head", "mean_(i≥2) A[i, i − 1]", to_trace(previous), {Axis::layer, Axis::head})
        .note = "The weight on the token just before." + even(1);
    rec.add_plain("role_duplicate", "Duplicate-token score per layer and head", "mean_(i > n) A[i, i − n]", to_trace(duplicate), {Axis::layer, Axis::head})
        .note = "The weight on the same token's earlier copy, n positions back." + even(n);
    // every head ranked by its induction score, beside its other scores, its weight on the first token and its entropy
    const std::size_t T = 2 * n;
    std::vector<std::pair<std::size_t, std::size_t>> order;
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t h = 0; h < H; ++h) order.emplace_back(l, h);
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) { return induction(a.first, a.second) > induction(b.first, b.second); });
    Mat table = Mat::from_shape({L * H, 7});
    for (std::size_t r = 0; r < order.size(); ++r) {
        const auto [l, h] = order[r];
        double first = 0.0, entropy = 0.0;  // over the rows from 2 (row 1 has only itself)
        for (std::size_t i = 1; i < T; ++i) {
            first += tap.weights[l](0, h, i, 0);
            for (std::size_t j = 0; j <= i; ++j) {
                const double a = tap.weights[l](0, h, i, j);
                if (a > 0.0) entropy -= a * std::log(a);
            }
        }
        table(r, 0) = static_cast<float>(l + 1);
        table(r, 1) = static_cast<float>(h + 1);
        table(r, 2) = induction(l, h);
        table(r, 3) = previous(l, h);
        table(r, 4) = duplicate(l, h);
        table(r, 5) = static_cast<float>(first / static_cast<double>(T - 1));
        table(r, 6) = static_cast<float>(entropy / static_cast<double>(T - 1));
    }
    Step& ranked = rec.add_plain("roles_ranked", "The heads ranked by their induction score, highest first", "sort by induction", to_trace(table),
                                 {Axis::rank, Axis::feature});
    ranked.tensor.integer_columns = 2;
    ranked.labels = {"layer", "head", "induction", "previous", "duplicate", "first_token", "entropy"};
    ranked.note = "first_token: the mean weight on the first token, entropy: the rows' mean entropy in nats, both over the rows from 2 of the "
                  "same random run.";
}

}  // namespace attnwalk::model_walk
