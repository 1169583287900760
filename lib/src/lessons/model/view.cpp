// The model view (every layer's and head's weights, numbers per head, the sink by depth, the
// heads ranked) and attention rollout: what the prompt's pass shows of all its attention.
#include "model_walk.hpp"

namespace attnwalk::model_walk {

std::string layer_values(const std::vector<double>& per_layer) {
    std::vector<std::pair<std::string, std::string>> groups;  // value → its layers
    for (std::size_t l = 0; l < per_layer.size(); ++l) {
        const std::string v = four_decimals(per_layer[l]);
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == v; });
        if (it == groups.end()) groups.push_back({v, std::to_string(l + 1)});
        else it->second += ", " + std::to_string(l + 1);
    }
    if (groups.size() == 1) return groups.front().first;
    std::string s;
    for (const auto& [v, layers] : groups)
        s += (s.empty() ? "" : "; ") + v + " in layer" + (layers.find(',') == std::string::npos ? " " : "s ") + layers;
    return s;
}

std::vector<double> head_stats(const float* a, std::size_t T) {
    // Over the rows 2…T: row 1 sees only itself and says nothing of the head (the roles
    // table and the sink by depth leave it out too).
    double entropy = 0, max = 0, first = 0, previous = 0, diagonal = 0;
    for (std::size_t i = 1; i < T; ++i) {
        const float* row = a + i * T;
        double e = 0, m = 0;
        for (std::size_t j = 0; j < T; ++j) {
            if (row[j] > 0) e -= static_cast<double>(row[j]) * std::log(static_cast<double>(row[j]));
            m = std::max(m, static_cast<double>(row[j]));
        }
        entropy += e;
        max += m;
        first += row[0];
        diagonal += row[i];
        previous += row[i - 1];
    }
    const double n = T > 1 ? static_cast<double>(T - 1) : 1.0;
    return {entropy / n, max / n, first / n, previous / n, diagonal / n};
}

namespace {

// What each of head_stats' numbers would be if every row spread its weight evenly over the
// keys it sees (causal, inside the layer's window): the baseline beside each head's.
std::vector<double> even_stats(std::size_t T, std::size_t window) {
    Mat even = band_mask(T, true, window);
    for (std::size_t i = 0; i < T; ++i) {
        float seen = 0.0f;
        for (std::size_t j = 0; j < T; ++j) seen += even(i, j);
        for (std::size_t j = 0; j < T; ++j) even(i, j) /= seen;
    }
    return head_stats(even.data(), T);
}

}  // namespace

void record_view(Recorder& rec, const ModelSpec& spec, const ModelInfo& info, const DecoderConfig& config, const xt::xtensor<float, 5>& grid,
                 std::size_t T) {
    const auto& stat_names = head_stat_names();
    const std::size_t L = info.layers, H = info.heads;
    rec.mask_from_here(CellMask{});
    Step& g = rec.add("attention_grid", "Every head of every layer", "A[layer, head]", grid, {Axis::layer, Axis::head, Axis::token, Axis::token});
    g.heads_grid = true;
    rec.mask_from_here(std::nullopt);
    std::string sliding, global;  // Gemma 3: local (sliding-window) and global layers
    std::size_t window = 0;
    for (std::size_t l = 0; l < L && l < config.layer_specs.size(); ++l) {
        std::string& list = config.layer_specs[l].window ? sliding : global;
        list += (list.empty() ? "" : ", ") + std::to_string(l + 1);
        window = config.layer_specs[l].window.value_or(window);
    }
    if (!sliding.empty())
        g.note = "Sliding-window layers (each token sees the last " + std::to_string(window) + "): " + sliding + "; global layers: " +
                 (global.empty() ? "none" : global) + ".";
    std::vector<Cube> stats(stat_names.size(), Cube::from_shape({1, L, H}));
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t h = 0; h < H; ++h) {
            const auto v = head_stats(&grid(0, l, h, 0, 0), T);
            for (std::size_t k = 0; k < v.size(); ++k) stats[k](0, l, h) = static_cast<float>(v[k]);
        }
    const char* titles[] = {"Entropy of each head's rows (nats; low = focused)", "Largest weight of each row, averaged",
                            "Weight on the first token (the attention sink)", "Weight on the previous token", "Weight on the token itself"};
    const char* formulas[] = {"mean_(i≥2) −Σ_j α_ij·ln α_ij", "mean_(i≥2) max_j α_ij", "mean_(i≥2) α_i,1", "mean_(i≥2) α_i,i−1", "mean_(i≥2) α_ii"};
    std::vector<std::vector<double>> even;  // per layer, what even rows would give
    for (std::size_t l = 0; l < L; ++l)
        even.push_back(even_stats(T, l < config.layer_specs.size() ? config.layer_specs[l].window.value_or(0) : 0));
    const auto baseline_words = [&](std::size_t k) {  // statistic k's even value, layer by layer
        std::vector<double> per_layer;
        for (const auto& e : even) per_layer.push_back(e[k]);
        return layer_values(per_layer);
    };
    for (std::size_t k = 0; k < stat_names.size(); ++k)
        rec.add("head_" + stat_names[k], titles[k], formulas[k], stats[k], {Axis::layer, Axis::head}).note =
            "Over the rows 2…" + std::to_string(T) + " (row 1 sees only itself). Rows spread evenly over the keys they see would give " +
            baseline_words(k) + ".";
    // The emergent sink by depth: the heads' weight on the first token, averaged (row 1, which has
    // nowhere else to look, left out as head_stats leaves it)
    if (T > 1) {
        Mat depth = Mat::from_shape({1, L});
        const std::size_t first = 2;  // head_stats' index of the first token's weight
        std::string sinks;  // the layers whose later tokens give token 1 half their weight, and twice what even rows would
        for (std::size_t l = 0; l < L; ++l) {
            double sum = 0.0;
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t i = 1; i < T; ++i) sum += grid(0, l, h, i, 0);
            depth(0, l) = static_cast<float>(sum / static_cast<double>(H * (T - 1)));
            if (depth(0, l) >= std::max(0.5, 2.0 * even[l][first])) sinks += (sinks.empty() ? "" : ", ") + std::to_string(l + 1);
        }
        Step& d = rec.add("sink_by_depth", "The attention sink by depth: weight on the first token from the later ones", "mean_h mean_(i≥2) α_i,1",
                          depth, {Axis::layer});
        const std::string baseline = "at least twice what rows spread evenly over the keys they see would give it (" + baseline_words(first) + ")";
        d.note = !sinks.empty() ? "In layer" + std::string(sinks.find(',') == std::string::npos ? " " : "s ") + sinks +
                                      " the later tokens give the first token half their weight or more, and " + baseline +
                                      ": it has become a sink, a place to put weight a head does not need elsewhere."
                                : "No layer's later tokens give the first token both half their weight or more and " + baseline + ".";
    }
    if (spec.sort.empty()) return;
    const std::size_t key = static_cast<std::size_t>(std::find(stat_names.begin(), stat_names.end(), spec.sort) - stat_names.begin());
    std::vector<std::pair<std::size_t, std::size_t>> order;
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t h = 0; h < H; ++h) order.emplace_back(l, h);
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
        return stats[key](0, a.first, a.second) > stats[key](0, b.first, b.second);
    });
    Mat table = Mat::from_shape({order.size(), 2 + stat_names.size()});
    for (std::size_t r = 0; r < order.size(); ++r) {
        table(r, 0) = static_cast<float>(order[r].first + 1);  // layer and head as the text counts them, from 1
        table(r, 1) = static_cast<float>(order[r].second + 1);
        for (std::size_t k = 0; k < stat_names.size(); ++k) table(r, 2 + k) = stats[k](0, order[r].first, order[r].second);
    }
    for (Step& drawn : rec.trace().steps)  // the grid in this order, as the drawings show it
        if (drawn.heads_grid) {
            drawn.ranked_by = spec.sort;
            for (const auto& [l, h] : order) {
                drawn.ranked_panels.push_back(l * H + h);
                drawn.ranked_values.push_back(stats[key](0, l, h));
            }
        }
    Step& st = rec.add_plain("heads_sorted", "The heads ranked by " + spec.sort + ", highest first", "sort by " + spec.sort, to_trace(table),
                             {Axis::rank, Axis::feature});
    st.tensor.integer_columns = 2;
    st.labels = {"layer", "head"};
    st.labels.insert(st.labels.end(), stat_names.begin(), stat_names.end());
    rec.trace().set_param("sort", spec.sort);
}

// Attention rollout (Abnar & Zuidema 2020): each layer's weights averaged over the heads,
// the identity added for the residual connection, rows normalised, and the layers
// multiplied, R = Â_L ··· Â_1.
void record_rollout(Recorder& rec, const std::vector<Mat>& means) {
    const std::size_t T = means.front().shape(0);
    Mat R;
    for (const Mat& m : means) {
        Mat a = m;
        for (std::size_t i = 0; i < T; ++i) a(i, i) += 1.0f;
        for (std::size_t i = 0; i < T; ++i) {
            float s = 0.0f;
            for (std::size_t j = 0; j < T; ++j) s += a(i, j);
            for (std::size_t j = 0; j < T; ++j) a(i, j) /= s;
        }
        if (R.size() == 0) {
            R = a;
            continue;
        }
        Mat next = Mat::from_shape({T, T});
        next.fill(0.0f);
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t k = 0; k < T; ++k)
                for (std::size_t j = 0; j < T; ++j) next(i, j) += a(i, k) * R(k, j);
        R = std::move(next);
    }
    rec.mask_from_here(CellMask{});
    Step& s = rec.add_with_row_sums("rollout", "Attention rollout through all " + std::to_string(means.size()) + " layers",
                                    "R = Â_L···Â_1, Â_l = rownorm(mean_h A_l,h + I)", Cube(xt::view(R, xt::newaxis(), xt::all(), xt::all())),
                                    tokens_tokens);
    rec.mask_from_here(std::nullopt);
    s.note = "Row i: how much position i draws on each input token, the residual connection counted as attending to oneself "
             "(Abnar & Zuidema 2020). Each row sums to 1.";
}

}  // namespace attnwalk::model_walk
