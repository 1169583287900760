// attnwalk context: context vectors as weighted sums.
#include "commands.hpp"

namespace attnwalk::app {

ATTNWALK_COMMAND(context) {
    add_single_head(cli, shell, "context",
                    "  attnwalk context --query journey     # the weighted sum, term by term\n"
                    "  attnwalk context --seed 123 --init rand     # the textbook's SelfAttention_v1\n"
                    "  attnwalk context --seed 789          # SelfAttention_v2 (nn.Linear initialisation)\n"
                    "  attnwalk context --explain 2,3 --seed 123 --init rand   # one cell, through W_query and W_key\n",
                    walk_context);
}

}  // namespace attnwalk::app
