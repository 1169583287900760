// ggml's block formats (ggml-common.h) and their dequantization (ggml-quants.c's
// dequantize_row_*), written again: each weight is float32 products of the block's
// half-precision scales and its integer codes, in ggml's order of operations. Built with
// -ffp-contract=off: d·q − m is a product rounded, then a difference rounded, as ggml's
// reference C computes it without fused multiply-adds.
//
//   type  weights  bytes  layout of one block
//   Q4_0     32     18    d (f16), qs[16]: y = (q − 8)·d, low nibbles first, then high
//   Q4_1     32     20    d, m (f16), qs[16]: y = q·d + m
//   Q5_0     32     22    d, qh[4] (the 5th bits, a u32), qs[16]: y = (q − 16)·d
//   Q5_1     32     24    d, m, qh[4], qs[16]: y = q·d + m
//   Q8_0     32     34    d, qs[32] (int8): y = q·d
//   Q2_K    256     84    scales[16] (4-bit scale | 4-bit min), qs[64], d, dmin
//   Q3_K    256    110    hmask[32] (the 3rd bits), qs[64] (2 bits), scales[12] (16 × 6 bits), d
//   Q4_K    256    144    d, dmin, scales[12] (8 × 6-bit scale and min), qs[128]
//   Q5_K    256    176    d, dmin, scales[12], qh[32], qs[128]
//   Q6_K    256    210    ql[128], qh[64], scales[16] (int8), d
//   IQ4_NL   32     18    d, qs[16]: y = d·kvalues_iq4nl[q], 16 non-uniform levels −127 … 113
//   IQ4_XS  256    136    d, scales_h (u16), scales_l[4] (8 × 6-bit scale), qs[128]:
//                         y = d·(ls − 32)·kvalues_iq4nl[q] in each of the 8 sub-blocks of 32
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/gguf.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

namespace {

constexpr std::size_t QK = 32, QK_K = 256;

float f16(const std::uint8_t* p) { return half_to_float(static_cast<std::uint16_t>(p[0] | (p[1] << 8))); }

// The j-th 6-bit scale and min of a Q4_K / Q5_K super-block (ggml's get_scale_min_k4).
void scale_min_k4(std::size_t j, const std::uint8_t* q, std::uint8_t& d, std::uint8_t& m) {
    if (j < 4) {
        d = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        d = static_cast<std::uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

void q4_0(const std::uint8_t* b, float* y) {
    const float d = f16(b);
    const std::uint8_t* qs = b + 2;
    for (std::size_t j = 0; j < QK / 2; ++j) {
        y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
        y[j + QK / 2] = static_cast<float>((qs[j] >> 4) - 8) * d;
    }
}

void q4_1(const std::uint8_t* b, float* y) {
    const float d = f16(b), m = f16(b + 2);
    const std::uint8_t* qs = b + 4;
    for (std::size_t j = 0; j < QK / 2; ++j) {
        y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
        y[j + QK / 2] = static_cast<float>(qs[j] >> 4) * d + m;
    }
}

std::uint32_t u32(const std::uint8_t* p) { return static_cast<std::uint32_t>(p[0] | (p[1] << 8) | (p[2] << 16)) | (static_cast<std::uint32_t>(p[3]) << 24); }

void q5(const std::uint8_t* b, float* y, bool with_min) {
    const float d = f16(b), m = with_min ? f16(b + 2) : 0.0f;
    const std::uint8_t* p = b + (with_min ? 4 : 2);
    const std::uint32_t qh = u32(p);
    const std::uint8_t* qs = p + 4;
    for (std::size_t j = 0; j < QK / 2; ++j) {
        const std::uint32_t h0 = ((qh >> (j + 0)) << 4) & 0x10, h1 = (qh >> (j + 12)) & 0x10;
        const int x0 = static_cast<int>((qs[j] & 0x0F) | h0), x1 = static_cast<int>((qs[j] >> 4) | h1);
        if (with_min) {
            y[j] = static_cast<float>(x0) * d + m;
            y[j + QK / 2] = static_cast<float>(x1) * d + m;
        } else {
            y[j] = static_cast<float>(x0 - 16) * d;
            y[j + QK / 2] = static_cast<float>(x1 - 16) * d;
        }
    }
}

// ggml's kvalues_iq4nl: the 16 levels a 4-bit code of IQ4_NL and IQ4_XS stands for
constexpr std::int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

void iq4_nl(const std::uint8_t* b, float* y) {
    const float d = f16(b);
    const std::uint8_t* qs = b + 2;
    for (std::size_t j = 0; j < QK / 2; ++j) {
        y[j] = d * static_cast<float>(kvalues_iq4nl[qs[j] & 0xF]);
        y[j + QK / 2] = d * static_cast<float>(kvalues_iq4nl[qs[j] >> 4]);
    }
}

void iq4_xs(const std::uint8_t* b, float* y) {
    const float d = f16(b);
    const unsigned scales_h = static_cast<unsigned>(b[2] | (b[3] << 8));
    const std::uint8_t* scales_l = b + 4;
    const std::uint8_t* qs = b + 8;
    for (std::size_t ib = 0; ib < QK_K / 32; ++ib, y += 32, qs += 16) {
        const int ls = static_cast<int>(((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4));
        const float dl = d * static_cast<float>(ls - 32);
        for (std::size_t j = 0; j < 16; ++j) {
            y[j] = dl * static_cast<float>(kvalues_iq4nl[qs[j] & 0xF]);
            y[j + 16] = dl * static_cast<float>(kvalues_iq4nl[qs[j] >> 4]);
        }
    }
}

void q8_0(const std::uint8_t* b, float* y) {
    const float d = f16(b);
    for (std::size_t j = 0; j < QK; ++j) y[j] = static_cast<float>(static_cast<std::int8_t>(b[2 + j])) * d;
}

void q2_k(const std::uint8_t* b, float* y) {
    const std::uint8_t* scales = b;
    const std::uint8_t* q = b + 16;
    const float d = f16(b + 80), min = f16(b + 82);
    std::size_t is = 0;
    for (std::size_t n = 0; n < QK_K; n += 128) {
        unsigned shift = 0;
        for (std::size_t j = 0; j < 4; ++j) {
            for (std::size_t half = 0; half < 2; ++half) {
                const std::uint8_t sc = scales[is++];
                const float dl = d * static_cast<float>(sc & 0xF), ml = min * static_cast<float>(sc >> 4);
                for (std::size_t l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[l + 16 * half] >> shift) & 3) - ml;
            }
            shift += 2;
        }
        q += 32;
    }
}

// y = d·(sc − 32)·(q − 4·(3rd bit clear)), the 16 scales of 6 bits shuffled into 12 bytes
void q3_k(const std::uint8_t* b, float* y) {
    const std::uint8_t* hm = b;
    const std::uint8_t* q = b + 32;
    const float d_all = f16(b + 108);
    constexpr std::uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
    std::uint32_t aux[4] = {u32(b + 96), u32(b + 100), u32(b + 104), 0};
    const std::uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    const auto scale = [&](std::size_t i) { return static_cast<int>(static_cast<std::int8_t>((aux[i / 4] >> (8 * (i % 4))) & 0xFF)); };
    std::size_t is = 0;
    unsigned m = 1;
    for (std::size_t n = 0; n < QK_K; n += 128) {
        unsigned shift = 0;
        for (std::size_t j = 0; j < 4; ++j) {
            for (std::size_t half = 0; half < 2; ++half) {
                const float dl = d_all * static_cast<float>(scale(is++) - 32);
                for (std::size_t l = 0; l < 16; ++l) {
                    const int code = static_cast<int>((q[l + 16 * half] >> shift) & 3) - ((hm[l + 16 * half] & m) ? 0 : 4);
                    *y++ = dl * static_cast<float>(code);
                }
            }
            shift += 2;
            m <<= 1;
        }
        q += 32;
    }
}

void q45_k(const std::uint8_t* b, float* y, bool five) {
    const float d = f16(b), min = f16(b + 2);
    const std::uint8_t* scales = b + 4;
    const std::uint8_t* qh = b + 16;  // Q5_K only
    const std::uint8_t* ql = b + (five ? 48 : 16);
    std::uint8_t u1 = 1, u2 = 2;
    for (std::size_t j = 0, is = 0; j < QK_K; j += 64, is += 2) {
        std::uint8_t sc, m;
        scale_min_k4(is + 0, scales, sc, m);
        const float d1 = d * static_cast<float>(sc), m1 = min * static_cast<float>(m);
        scale_min_k4(is + 1, scales, sc, m);
        const float d2 = d * static_cast<float>(sc), m2 = min * static_cast<float>(m);
        for (std::size_t l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0xF) + (five && (qh[l] & u1) ? 16 : 0)) - m1;
        for (std::size_t l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)) - m2;
        ql += 32;
        u1 = static_cast<std::uint8_t>(u1 << 2);
        u2 = static_cast<std::uint8_t>(u2 << 2);
    }
}

void q6_k(const std::uint8_t* b, float* y) {
    const std::uint8_t* ql = b;
    const std::uint8_t* qh = b + 128;
    const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192);
    const float d = f16(b + 208);
    for (std::size_t n = 0; n < QK_K; n += 128) {
        for (std::size_t l = 0; l < 32; ++l) {
            const std::size_t is = l / 16;
            const int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
            y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
            y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
            y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

}  // namespace

const char* ggml_type_name(std::uint32_t type) {
    switch (static_cast<GgmlType>(type)) {
        case GgmlType::f32: return "F32";
        case GgmlType::f16: return "F16";
        case GgmlType::bf16: return "BF16";
        case GgmlType::q4_0: return "Q4_0";
        case GgmlType::q4_1: return "Q4_1";
        case GgmlType::q5_0: return "Q5_0";
        case GgmlType::q5_1: return "Q5_1";
        case GgmlType::q8_0: return "Q8_0";
        case GgmlType::q2_k: return "Q2_K";
        case GgmlType::q3_k: return "Q3_K";
        case GgmlType::q4_k: return "Q4_K";
        case GgmlType::q5_k: return "Q5_K";
        case GgmlType::q6_k: return "Q6_K";
        case GgmlType::iq4_nl: return "IQ4_NL";
        case GgmlType::iq4_xs: return "IQ4_XS";
    }
    return nullptr;
}

const char* ggml_unread_type_name(std::uint32_t type) {
    // ggml.h's enum ggml_type (4 and 5, Q4_2 and Q4_3, were removed; 31–33 and 36–38 are gone too)
    switch (type) {
        case 9: return "Q8_1";
        case 15: return "Q8_K";
        case 16: return "IQ2_XXS";
        case 17: return "IQ2_XS";
        case 18: return "IQ3_XXS";
        case 19: return "IQ1_S";
        case 21: return "IQ3_S";
        case 22: return "IQ2_S";
        case 24: return "I8";
        case 25: return "I16";
        case 26: return "I32";
        case 27: return "I64";
        case 28: return "F64";
        case 29: return "IQ1_M";
        case 34: return "TQ1_0";
        case 35: return "TQ2_0";
        case 39: return "MXFP4";
        default: return nullptr;
    }
}

std::size_t ggml_block_weights(GgmlType type) {
    switch (type) {
        case GgmlType::f32: case GgmlType::f16: case GgmlType::bf16: return 1;
        case GgmlType::q2_k: case GgmlType::q3_k: case GgmlType::q4_k: case GgmlType::q5_k: case GgmlType::q6_k:
        case GgmlType::iq4_xs: return QK_K;
        default: return QK;
    }
}

std::size_t ggml_block_bytes(GgmlType type) {
    switch (type) {
        case GgmlType::f32: return 4;
        case GgmlType::f16: case GgmlType::bf16: return 2;
        case GgmlType::q4_0: return 18;
        case GgmlType::q4_1: return 20;
        case GgmlType::q5_0: return 22;
        case GgmlType::q5_1: return 24;
        case GgmlType::q8_0: return 34;
        case GgmlType::q2_k: return 84;
        case GgmlType::q3_k: return 110;
        case GgmlType::q4_k: return 144;
        case GgmlType::q5_k: return 176;
        case GgmlType::q6_k: return 210;
        case GgmlType::iq4_nl: return 18;
        case GgmlType::iq4_xs: return 136;
    }
    return 0;
}

void ggml_dequantize(GgmlType type, const std::uint8_t* p, float* y, std::size_t n) {
    const std::size_t per = ggml_block_weights(type), bytes = ggml_block_bytes(type);
    if (n % per != 0) throw std::logic_error("ggml_dequantize: not a whole number of blocks");
    for (std::size_t i = 0; i < n / per; ++i, p += bytes, y += per) {
        switch (type) {
            case GgmlType::f32: {
                const std::uint32_t bits = u32(p);
                std::memcpy(y, &bits, 4);
                break;
            }
            case GgmlType::f16: *y = f16(p); break;
            case GgmlType::bf16: *y = bfloat16_to_float(static_cast<std::uint16_t>(p[0] | (p[1] << 8))); break;
            case GgmlType::q4_0: q4_0(p, y); break;
            case GgmlType::q4_1: q4_1(p, y); break;
            case GgmlType::q5_0: q5(p, y, false); break;
            case GgmlType::q5_1: q5(p, y, true); break;
            case GgmlType::q8_0: q8_0(p, y); break;
            case GgmlType::q2_k: q2_k(p, y); break;
            case GgmlType::q3_k: q3_k(p, y); break;
            case GgmlType::q4_k: q45_k(p, y, false); break;
            case GgmlType::q5_k: q45_k(p, y, true); break;
            case GgmlType::q6_k: q6_k(p, y); break;
            case GgmlType::iq4_nl: iq4_nl(p, y); break;
            case GgmlType::iq4_xs: iq4_xs(p, y); break;
        }
    }
}

GgmlBlockParts ggml_block_parts(GgmlType type, const std::uint8_t* b) {
    GgmlBlockParts parts;
    const auto half = [&](const std::uint8_t* p) {
        parts.scale_bits.push_back(static_cast<std::uint16_t>(p[0] | (p[1] << 8)));
        parts.scales.push_back(f16(p));
    };
    switch (type) {
        case GgmlType::q8_0:
            half(b);
            for (std::size_t j = 0; j < QK; ++j) parts.codes.push_back(static_cast<std::int8_t>(b[2 + j]));
            return parts;
        case GgmlType::q4_0:
            half(b);
            parts.codes.resize(QK);
            for (std::size_t j = 0; j < QK / 2; ++j) {  // the low nibbles are weights 0..15, the high ones 16..31
                parts.codes[j] = b[2 + j] & 0x0F;
                parts.codes[j + QK / 2] = b[2 + j] >> 4;
            }
            return parts;
        case GgmlType::q4_k:
            half(b);
            half(b + 2);
            for (std::size_t j = 0; j < 8; ++j) {
                std::uint8_t sc, m;
                scale_min_k4(j, b + 4, sc, m);
                parts.sub_scales.push_back(sc);
                parts.sub_mins.push_back(m);
            }
            for (std::size_t k = 0; k < 4; ++k) {  // 32 bytes per pair of sub-blocks: low nibbles, then high
                const std::uint8_t* ql = b + 16 + 32 * k;
                for (std::size_t l = 0; l < 32; ++l) parts.codes.push_back(ql[l] & 0x0F);
                for (std::size_t l = 0; l < 32; ++l) parts.codes.push_back(ql[l] >> 4);
            }
            return parts;
        default:
            throw std::invalid_argument(std::string("ggml_block_parts: ") + ggml_type_name(static_cast<std::uint32_t>(type)) + " is not taken apart");
    }
}

namespace {

// IEEE half, rounded to nearest even (GGML_FP32_TO_FP16); F. Giesen's float_to_half_fast3_rtne.
std::uint16_t to_f16(float value) {
    std::uint32_t f;
    std::memcpy(&f, &value, 4);
    const std::uint32_t sign = f & 0x80000000u, infinity = 255u << 23, largest = (127u + 16u) << 23;
    const std::uint32_t magic_bits = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    f ^= sign;
    std::uint16_t out;
    if (f >= largest) {
        out = f > infinity ? 0x7E00 : 0x7C00;
    } else if (f < (113u << 23)) {  // a subnormal half: the float addition rounds it
        float v, magic;
        std::memcpy(&v, &f, 4);
        std::memcpy(&magic, &magic_bits, 4);
        v += magic;
        std::uint32_t u;
        std::memcpy(&u, &v, 4);
        out = static_cast<std::uint16_t>(u - magic_bits);
    } else {
        const std::uint32_t odd = (f >> 13) & 1;
        f += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xFFF;
        f += odd;
        out = static_cast<std::uint16_t>(f >> 13);
    }
    return static_cast<std::uint16_t>(out | (sign >> 16));
}

}  // namespace

std::vector<std::uint8_t> ggml_quantize(GgmlType type, const float* x, std::size_t n) {
    if ((type != GgmlType::q8_0 && type != GgmlType::q4_0) || n % QK != 0)
        throw std::invalid_argument("ggml_quantize: Q8_0 or Q4_0, whole blocks of 32");
    std::vector<std::uint8_t> out;
    for (std::size_t i = 0; i < n; i += QK, x += QK) {
        float amax = 0.0f, max = 0.0f;
        for (std::size_t j = 0; j < QK; ++j)
            if (amax < std::fabs(x[j])) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        const float d = type == GgmlType::q8_0 ? amax / 127.0f : max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const std::uint16_t bits = to_f16(d);
        out.push_back(static_cast<std::uint8_t>(bits & 0xFF));
        out.push_back(static_cast<std::uint8_t>(bits >> 8));
        if (type == GgmlType::q8_0) {
            for (std::size_t j = 0; j < QK; ++j) out.push_back(static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(x[j] * id))));
        } else {
            for (std::size_t j = 0; j < QK / 2; ++j) {
                const int lo = std::min(15, static_cast<int>(static_cast<std::int8_t>(x[j] * id + 8.5f)));
                const int hi = std::min(15, static_cast<int>(static_cast<std::int8_t>(x[QK / 2 + j] * id + 8.5f)));
                out.push_back(static_cast<std::uint8_t>(lo | (hi << 4)));
            }
        }
    }
    return out;
}

}  // namespace attnwalk
