// The explanation engine on latent attention (MLA, DeepSeek-V3): a cell's query through its
// own latent, the key's latent c_KV, its up-projections to k_nope and to the value, the rotary key every head
// shares, and the score's content and position parts. Every number is the layer's forward's
// (ops/latent_attention); the softmax and the context follow in explain.cpp.
#include <cmath>

#include "attnwalk/errors.hpp"
#include "explain_parts.hpp"
#include "steps.hpp"

namespace attnwalk::explain_parts {

namespace {

// rope_interleave: (x1, x2, x3, x4, …) -> (x1, x3, … | x2, x4, …), as the forward reorders before RoPE.
std::vector<float> deinterleaved(const std::vector<float>& x) {
    std::vector<float> out(x.size());
    const std::size_t half = x.size() / 2;
    for (std::size_t i = 0; i < half; ++i) {
        out[i] = x[2 * i];
        out[half + i] = x[2 * i + 1];
    }
    return out;
}

// "RMSNorm over its n numbers: √(mean(c²) + ε) = …", of the row before the norm.
std::string rms_words(const std::vector<float>& before, float eps, const std::string& norm) {
    const double ms = rms_of(before.data(), before.size());
    return "Then RMSNorm (" + norm + ") over its " + std::to_string(before.size()) + " numbers: √(mean(c²) + ε) = √(" + num(ms * ms) + " + " + num(eps) +
           ") = " + num(std::sqrt(ms * ms + static_cast<double>(eps))) + "; each divided by it, times the norm's weight, feature by feature.";
}

}  // namespace

float explain_latent_score(Recorder& rec, const CellRef& cell, const ExplainView& v, const CellNames& n) {
    const LatentSource& S = *v.latent;
    const LatentForward& lf = S.f;
    const LatentWeights& w = *S.weights;
    const Forward& f = *v.f;
    const std::size_t i = cell.query, j = cell.key, h = cell.head, r = i - f.row0, P = f.q_position0;
    if (j < P || !v.x) throw UsageError("key " + n.J + " comes from the latent cache: its projections are not kept");
    const std::size_t qk = w.qk_head(), R = w.rank(), dr = w.rope, t = j - P;  // t: the key's row among the new tokens
    const std::string &I = n.I, &J = n.J, &qi = n.qi, &kj = n.kj, H = std::to_string(h + 1);
    const std::vector<float> xi = slice_of(*v.x, i, 0, v.x->shape(2)), xj = slice_of(*v.x, t, 0, v.x->shape(2));
    const std::string in = v.layer && v.layer->norm ? "n" : "x";

    // ---- the query: through its own latent, then head h's columns ------------------------------
    std::vector<float> query_in = xi;
    if (w.q_a_proj) {
        const std::size_t rq = w.query_rank();
        const std::vector<float> before = slice_of(lf.q_a, r, 0, rq);
        query_in = slice_of(lf.q_a_normed, r, 0, rq);
        Step& a = rec.add_plain("explain_query_latent", "The query's own latent of " + quoted(qi) + ": its normalised row times " + S.q_a + ", " +
                                                            std::to_string(rq) + " numbers, then RMSNorm",
                                "c_Q," + I + " = RMSNorm(" + in + "_" + I + "·W_qa)", vector_tensor(query_in), {Axis::feature});
        a.expansion.push_back(projection_expansion("c_Q(" + qi + ")", xi, *w.q_a_proj, 0, rq, before));
        a.note = rms_words(before, w.eps, S.q_a_norm);
    }
    const std::vector<float> q_full = slice_of(lf.q, r, h * qk, qk);
    Step& q = rec.add_plain("explain_query", "The query of " + quoted(qi) + n.where + ": " + (w.q_a_proj ? "its latent c_Q" : "its normalised row") +
                                                 " times the " + (w.q_a_proj ? S.q_b : S.query) + " columns of head " + H + ", [q_nope | q_rope]",
                            "q_" + I + " = " + (w.q_a_proj ? "c_Q," + I + "·W_qb" : in + "_" + I + "·W_q") + "[:, head " + H + "]", vector_tensor(q_full),
                            {Axis::feature});
    q.expansion.push_back(projection_expansion("q(" + qi + ")", query_in, w.q_a_proj ? *w.q_b_proj : *w.q_proj, h * qk, qk, q_full));
    q.note = "Its first d_nope = " + std::to_string(w.nope) + " features are the content part q_nope, which meets the key's content; the last d_rope = " +
             std::to_string(dr) + " the position part q_rope, which RoPE turns.";

    // ---- the key: the latent c_KV, its up-projection, the shared rotary key --------------------
    const std::vector<float> c_before = slice_of(lf.kv_a, t, 0, R), c_kv = slice_of(lf.latent, j, 0, R);
    Step& kl = rec.add_plain("explain_key_latent", "The key's latent c_KV of " + quoted(kj) + ": its normalised row times the first r = " + std::to_string(R) +
                                                       " columns of " + S.kv_a + ", then RMSNorm",
                             "c_KV," + J + " = RMSNorm((" + in + "_" + J + "·W_DKV)[:r])", vector_tensor(c_kv), {Axis::feature});
    kl.expansion.push_back(projection_expansion("c(" + kj + ")", xj, w.kv_a_proj, 0, R, c_before));
    kl.note = rms_words(c_before, w.eps, S.kv_a_norm) + " What a cache keeps of this token: these " + std::to_string(R) + " numbers and the " +
              std::to_string(dr) + " of its rotary key, where its heads' keys and values would take H·(d_nope + d_rope + d_v) = " +
              std::to_string(w.heads * (qk + w.value)) + ".";
    const std::size_t stride = w.nope + w.value;
    const std::vector<float> k_nope = row_of(lf.k_nope, h, j);
    Step& kn = rec.add_plain("explain_key_nope", "The key's content part for head " + H + ": c_KV up-projected by W_UK," + H + " (" + S.kv_b + "'s columns " +
                                                     std::to_string(h * stride + 1) + "…" + std::to_string(h * stride + w.nope) + ")",
                             "k_nope," + J + " = c_KV," + J + "·W_UK," + H, vector_tensor(k_nope), {Axis::feature});
    kn.expansion.push_back(projection_expansion("k_nope(" + kj + ")", c_kv, w.kv_b_proj, h * stride, w.nope, k_nope));
    const std::vector<float> v_j = row_of(f.vh, h, j);
    Step& vl = rec.add_plain("explain_value_latent", "The key's value for head " + H + ": the same c_KV up-projected by W_UV," + H + " (" + S.kv_b +
                                                         "'s columns " + std::to_string(h * stride + w.nope + 1) + "…" + std::to_string((h + 1) * stride) + ")",
                             "v_" + J + " = c_KV," + J + "·W_UV," + H, vector_tensor(v_j), {Axis::feature});
    vl.expansion.push_back(projection_expansion("v(" + kj + ")", c_kv, w.kv_b_proj, h * stride + w.nope, w.value, v_j));
    vl.note = "Keys and values both come out of the " + std::to_string(R) + " numbers of c_KV: a cache keeps the latent, not the " +
              std::to_string(w.nope + w.value) + " numbers per head of k_nope and v.";
    const std::vector<float> k_rope_plain = slice_of(lf.k_rope_plain, t, 0, dr);
    Step& kr = rec.add_plain("explain_key_rope", "The rotary key of " + quoted(kj) + ", one for every head: the last d_rope = " + std::to_string(dr) +
                                                     " columns of " + S.kv_a + ", before RoPE",
                             "k_rope," + J + " = (" + in + "_" + J + "·W_DKV)[r:]", vector_tensor(k_rope_plain), {Axis::feature});
    kr.expansion.push_back(projection_expansion("k_rope(" + kj + ")", xj, w.kv_a_proj, R, dr, k_rope_plain));
    kr.note = "Not made from the latent: position cannot pass through W_UK once RoPE has turned it, so the rotary part is its own, shared by the " +
              std::to_string(w.heads) + " heads.";

    // ---- RoPE on the rotary parts --------------------------------------------------------------------
    const std::vector<float> q_rope = row_of(lf.q_rope, h, r), k_rope = slice_of(lf.k_rope, j, 0, dr);
    if (lf.tables) {
        const Rope& rope = *lf.tables;
        const std::string pi = std::to_string(f.q_position0 + i), pj = std::to_string(j);
        const auto plain = [&](std::vector<float> x) { return S.interleave ? deinterleaved(x) : x; };
        const std::string layout = S.interleave ? " (rope_interleave: the weights hold each pair side by side, (1, 2), (3, 4), …; the forward de-interleaves "
                                                  "them first, as Hugging Face's apply_rotary_pos_emb_interleave, so the vector below is in the rotation's order)"
                                                : "";
        Step& rq = rec.add_plain("explain_query_rotated", "The query's rotary part of " + quoted(qi) + ", rotated by its position id p = " + pi,
                                 "q_rope′_" + I + " = q_rope," + I + "·cos φ(" + pi + ") + rotate_half(q_rope," + I + ")·sin φ(" + pi + ")",
                                 vector_tensor(q_rope), {Axis::feature});
        std::string angles;
        for (std::size_t c = 0; c < dr / 2; ++c) angles += (c ? ", " : "") + format_number(rope.angles(i, c));
        rq.note = "Pairs of features turn together, each written out below with its partner beside it" + layout + ", by the angles φ(p) = p·θ = " + angles +
                  " (radians; " + frequency_words(rope, v.layer ? v.layer->rope : std::nullopt) + "); position ids count from 0, so token " + I + " has p = " +
                  pi + ".";
        if (rope.attention_scaling != 1.0f) rq.note += " cos and sin are multiplied by YaRN's attention factor " + format_number(rope.attention_scaling) + ".";
        std::string left_out;
        rq.expansion = rotation_pairs("q_rope", plain(row_of(lf.q_rope_plain, h, r)), q_rope, rope, r, &left_out, S.interleave);
        if (!left_out.empty()) rq.note += " " + left_out;
        Step& rk = rec.add_plain("explain_key_rotated", "The rotary key of " + quoted(kj) + ", rotated by its position id p = " + pj,
                                 "k_rope′_" + J + " = k_rope," + J + "·cos φ(" + pj + ") + rotate_half(k_rope," + J + ")·sin φ(" + pj + ")",
                                 vector_tensor(k_rope), {Axis::feature});
        rk.expansion = rotation_pairs("k_rope", plain(k_rope_plain), k_rope, rope, t, nullptr, S.interleave);
        rk.note = "The same rotation for every head: the score's position part sees only the difference of the two positions.";
    }

    // ---- the score: its content part, its position part ----------------------------------------
    const float nope = lf.scores_nope(0, h, r, j), pos = lf.scores_rope(0, h, r, j), score = f.scores(0, h, r, j);
    Step& sn = rec.add_plain("explain_score_nope", "The score's content part: " + quoted(qi) + "'s q_nope against " + quoted(kj) + "'s k_nope",
                             "q_nope," + I + "·k_nope," + J, scalar_trace(nope), {});
    sn.expansion.push_back(dot_of(qi + "·" + kj + " (content)", row_of(lf.q_nope, h, r), k_nope, nope));
    Step& sr = rec.add_plain("explain_score_rope", "The score's position part: the rotated q_rope against the rotated shared key",
                             "q_rope′_" + I + "·k_rope′_" + J, scalar_trace(pos), {});
    sr.expansion.push_back(dot_of(qi + "·" + kj + " (position)", q_rope, k_rope, pos));
    Step& s = rec.add_plain("explain_score", "The score of " + quoted(qi) + " against " + quoted(kj) + n.where + ": content plus position",
                            "ω_" + I + "," + J + " = q_nope·k_nope + q_rope′·k_rope′", scalar_trace(score), {});
    Expansion sum;
    sum.label = "ω(" + qi + "·" + kj + ")";
    sum.terms.push_back({1.0f, {nope}, "content"});
    sum.terms.push_back({1.0f, {pos}, "position"});
    sum.result = {score};
    s.expansion.push_back(std::move(sum));
    s.note = "The same as q_" + I + "·k_" + J + " over the head's [nope | rope] features, " + std::to_string(qk) + " products, computed as the forward does: two dot products, added.";
    return score;
}

}  // namespace attnwalk::explain_parts
