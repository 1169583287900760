// attnwalk scores: dot-product scores, for one query or all.
#include "commands.hpp"

namespace attnwalk::app {

ATTNWALK_COMMAND(scores) {
    add_single_head(cli, shell, "scores",
                    "  attnwalk scores                      # the full 6×6 score matrix of the built-in sentence\n"
                    "  attnwalk scores --query journey      # one query, each dot product written out\n"
                    "  attnwalk scores --seed 123 --init rand --query 2\n",
                    walk_scores);
}

}  // namespace attnwalk::app
