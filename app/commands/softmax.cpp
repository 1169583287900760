// attnwalk softmax: from scores to weights, three ways side by side.
#include "commands.hpp"

namespace attnwalk::app {

ATTNWALK_COMMAND(softmax) {
    add_single_head(cli, shell, "softmax",
                    "  attnwalk softmax --query journey     # the three normalisations side by side\n"
                    "  attnwalk softmax -i data/large_scores.json   # naive softmax overflows, the stable one does not\n"
                    "  attnwalk softmax --scale 2           # divide the scores by 2 first\n"
                    "  attnwalk softmax --explain journey,starts   # one weight, every number that goes into it\n",
                    walk_softmax);
}

}  // namespace attnwalk::app
