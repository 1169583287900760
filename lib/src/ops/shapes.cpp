#include "attnwalk/ops/shapes.hpp"

#include "attnwalk/errors.hpp"

namespace attnwalk {

std::optional<std::string> head_shape_problem(std::optional<std::size_t> width, std::size_t heads, std::size_t kv_heads) {
    if (heads < 1 || (width && *width % heads != 0))
        return "d_out must be divisible by the number of heads: d_out " + std::to_string(width.value_or(0)) + " is not a multiple of " +
               std::to_string(heads);
    if (kv_heads && heads % kv_heads != 0)
        return "the key/value heads must divide the query heads: " + std::to_string(kv_heads) + " does not divide " +
               std::to_string(heads);
    return std::nullopt;
}

void check_head_shape(std::size_t width, std::size_t heads, std::size_t kv_heads) {
    if (auto problem = head_shape_problem(width, heads, kv_heads)) throw UsageError(*problem);
}

}  // namespace attnwalk
