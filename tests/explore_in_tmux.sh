#!/bin/bash
# attnwalk explore driven through tmux at 80×24: the cell named and written out, the screen
# used (every key labelled, the step's title, a heatmap that grows at 120×40), keys that
# switch head and page, the list of keys (only those that act; ? or Esc closes it, a key that
# acts too), --view opening on --layer and --head, a resized terminal laid out again, q and Ctrl-C quit with exit 0 and
# the terminal restored; SIGTERM and SIGHUP restore it and exit 128 + N; bidi controls in
# tokens shown as stand-ins; an unknown TERM and no terminal are one line and exit 2. The screen two steps down
# is kept as WORK_DIR/explore/mha.ansi (capture-pane -e) and, where chromium is installed,
# drawn as WORK_DIR/explore/mha.png (README's picture). Skipped (exit 77) without tmux.
# Usage: explore_in_tmux.sh ATTNWALK_BINARY WORK_DIR
set -u
binary=$1 work=$2 here=$(cd "$(dirname "$0")" && pwd)
command -v tmux >/dev/null || { echo "tmux is not installed: skipped"; exit 77; }
export TMUX_TMPDIR=$(mktemp -d)  # a server of our own
trap 'tmux kill-server 2>/dev/null; rm -rf "$TMUX_TMPDIR"' EXIT
# a session that outlives every test's own: killing session x must not end the server while
# the next test's client connects to it
tmux new-session -d -s keep -x 80 -y 24 "sleep 600"
export LC_ALL=C.UTF-8  # grep -P reads \x{202E} only in a UTF-8 locale
failures=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi; }
screen() { tmux capture-pane -t x -p; }
wait_for() { for _ in $(seq 50); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done; return 1; }
# line N of the screen starts with TEXT (waits for a redraw)
line_starts() { for _ in $(seq 50); do screen | sed -n "$1p" | grep -q "^$2" && return 0; sleep 0.1; done; return 1; }
picture() {  # the screen with its colours, and drawn by chromium where it is installed
  mkdir -p "$work/explore"
  tmux capture-pane -t x -e -p > "$work/explore/mha.ansi"
  local browser; browser=$(command -v chromium || command -v chromium-browser || true)
  [ -n "$browser" ] && command -v python3 >/dev/null || return 0
  python3 "$here/ansi_to_html.py" "$work/explore/mha.ansi" 24 > "$work/explore/mha.html" &&
    timeout 60 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=700,450 \
      --screenshot="$work/explore/mha.png" "file://$work/explore/mha.html" >/dev/null 2>&1
  check "the screen drawn as a picture" "[ -s '$work/explore/mha.png' ]"
}

for quit in q C-c; do
  rm -f "$work/explore.rc"
  tmux new-session -d -s x -x 80 -y 24 "TERM=xterm-256color LANG=C.UTF-8 '$binary' explore mha --heads 2 --causal; echo \$? > '$work/explore.rc'; sleep 60"
  check "the explorer opens on the weights" "wait_for 'attnwalk explore · weights'"
  tmux send-keys -t x Down Down
  check "the cell is named, counted from 1" "wait_for 'query 3 \"starts\", key 1 \"Your\"'"
  check "its path through the steps" "wait_for '> weights  0.3140'"
  check "and written out as --explain writes it" "wait_for '[1] The query of \"starts\" in head 1'"
  [ "$quit" = q ] && picture
  tmux send-keys -t x h
  check "h switches the head" "wait_for 'head 2'"
  tmux send-keys -t x NPage
  check "PgDn pages the explanation" "wait_for 'page 2/'"
  tmux send-keys -t x '?'
  check "? lists the keys that act here (heads, PgDn) and how to close the list" "wait_for 'next / previous head' && wait_for '? or Esc         close this list' && wait_for 'PgDn / PgUp'"
  check "the list leaves out l/L: one layer here" "! screen | grep -qF 'next / previous layer'"
  check "every line fits 80 columns" "screen | python3 -c 'import sys; sys.exit(any(len(l.rstrip(\"\\n\")) > 80 for l in sys.stdin))'"
  if [ "$quit" = q ]; then
    tmux send-keys -t x Escape
    check "Esc closes the list and the explorer stays" "for _ in \$(seq 50); do ! screen | grep -qF 'close this list' && break; sleep 0.1; done; ! screen | grep -qF 'close this list' && screen | grep -qF 'attnwalk explore · weights'"
  else
    tmux send-keys -t x s
    check "s with the list shown: the next step, and the list gone from over it" "wait_for 'attnwalk explore · head_outputs' && ! screen | grep -qF 'close this list'"
    tmux send-keys -t x S '?'
    check "back on the weights, the list again" "wait_for 'attnwalk explore · weights' && wait_for 'close this list'"
    tmux send-keys -t x '?'
    check "? closes it" "for _ in \$(seq 50); do ! screen | grep -qF 'close this list' && break; sleep 0.1; done; ! screen | grep -qF 'close this list'"
  fi
  if [ "$quit" = q ]; then  # resized: laid out again for the new size, the keys on its last line
    tmux resize-window -t x -x 64 -y 20
    check "a smaller terminal (64×20): the title on line 1, the keys on line 20" "line_starts 1 'attnwalk explore' && line_starts 20 'arrows cell'"
    tmux resize-window -t x -x 100 -y 30
    check "a larger one (100×30): the keys whole on line 30" "line_starts 30 'arrows cell.*q quit'"
    check "and the panel's lines use the width (some longer than 80)" "screen | awk 'length > 80 { found = 1 } END { exit !found }'"
    tmux resize-window -t x -x 80 -y 24
  fi
  tmux send-keys -t x "$quit"
  for _ in $(seq 150); do [ -s "$work/explore.rc" ] && break; sleep 0.1; done
  check "$quit quits with exit 0" "[ \"\$(cat '$work/explore.rc' 2>/dev/null)\" = 0 ]"
  check "$quit restores the terminal (the explorer's screen is gone)" "! screen | grep -qF 'attnwalk explore ·'"
  tmux kill-session -t x
done

# Home and End move the cursor (tmux sends escape sequences xterm's terminfo does not name):
# they must not read as a lone Esc, which quits
tmux new-session -d -s x -x 80 -y 24 "TERM=xterm-256color LANG=C.UTF-8 '$binary' explore softmax; sleep 60"
check "softmax opens" "wait_for 'attnwalk explore · weights'"
check "the written-out sum is wrapped, not cut: its last factor is on screen" "wait_for '0.8900·0.8900'"
tmux send-keys -t x End
check "End goes to the last key" "wait_for 'key 6 \"step\"'"
tmux send-keys -t x Home
check "Home goes to the first key" "wait_for 'key 1 \"Your\"'"
check "Home and End did not quit" "screen | grep -qF 'attnwalk explore ·'"
check "the key bar offers only what works here (no layers, no heads)" "screen | tail -n 1 | grep -qv 'l/L layer' && screen | tail -n 1 | grep -qv 'h/H head'"
tmux kill-session -t x

# a model: the layer and its kind in the title, the cell written out by the engine
tmux new-session -d -s x -x 120 -y 40 "TERM=xterm-256color LANG=C.UTF-8 '$binary' explore model --model '$here/data/models/tiny_gemma3' --text 'the cat sat on the mat and the dog' --layer 1; sleep 60"
check "a model's title names the layer and its kind" "wait_for 'layer 1 (sliding window, W = 4), head 1'"
tmux send-keys -t x Down Down Down Down Down
check "its cell written out: the row through the layer's norm" "wait_for 'entering layer 1, through RMSNorm'"
check "every line fits 120 columns" "screen | python3 -c 'import sys; sys.exit(any(len(l.rstrip(\"\\n\")) > 120 for l in sys.stdin))'"
tmux kill-session -t x

# issue 57 item 7: the screen used. 8 tokens at 80×24: the step's title under the title
# line, every key labelled (abbreviated, on two rows); then 120×40: the cells larger, their
# values in them, the heatmap taller, the written-out text wider
all_keys() {
  local labels; labels=$(screen | sed -n '4,5p')
  for k in '<|be…' he '␣cat' '␣sat' '␣on' '␣the' '␣mat'; do printf '%s\n' "$labels" | grep -qF -- "$k" || return 1; done
  printf '%s\n' "$labels" | grep -qE '(^| )t( |$)'
}
# the line where a row label starts (0 if none)
row_line() { screen | grep -n "^$1" | head -n 1 | cut -d: -f1 | grep . || echo 0; }
tmux new-session -d -s x -x 80 -y 24 "TERM=xterm-256color LANG=C.UTF-8 '$binary' explore model --model '$here/data/models/tiny_llama' --text 'the cat sat on the mat' --layer 2 --head 3; sleep 60"
check "llama at 80×24 opens on the weights" "wait_for 'attnwalk explore · weights'"
check "the step's title and formula on line 2" "line_starts 2 'Layer 2: causal attention weights of head 3'"
check "every one of the 8 keys labelled at 80×24" "all_keys"
check "no value squeezed into 3 characters (.45)" "! screen | grep -qE '(^| )-?\.[0-9]'"
check "every line fits 80 columns" "screen | python3 -c 'import sys; sys.exit(any(len(l.rstrip(\"\\n\")) > 80 for l in sys.stdin))'"
tmux send-keys -t x w
check "w at 80 columns: the title says it short, and whole" "wait_for '· full width (w)' && [ \$(screen | head -n 1 | sed 's/ *$//' | wc -m) -le 81 ]"
tmux send-keys -t x w
sleep 0.5
check "w again: the heatmap back" "! screen | head -n 1 | grep -qF 'full width'"
small=$(row_line '␣mat')
tmux resize-window -t x -x 120 -y 40
check "at 120×40 the cells hold their values" "wait_for '0.589'"
check "every key labelled there too" "screen | sed -n '4p' | grep -qF '␣mat'"
check "the heatmap grows: its last row twice as far down" "[ \$(row_line '␣mat') -ge \$((2 * small)) ]"
check "the written-out text uses the width (lines past column 100)" "screen | python3 -c 'import sys; sys.exit(not any(len(l.rstrip(\"\\n\")) > 100 for l in sys.stdin))'"
tmux send-keys -t x w
check "w: the explanation over the whole width" "wait_for 'the explanation, full width (w: the heatmap)' && ! screen | grep -q '^␣mat'"
tmux send-keys -t x w
check "w again: the heatmap back" "wait_for '0.589'"
tmux kill-session -t x

# Qwen3-Next at 80×24: every step's screen fits 80 columns, the keys whole on the last line,
# the scroll's place whole where the heatmap does not all fit
qwen3_next=$(ls -d "$here"/data/models/tiny_qwen3_next | head -n 1)
tmux new-session -d -s x -x 80 -y 24 "TERM=xterm-256color LANG=C.UTF-8 '$binary' explore model --model '$qwen3_next' --ids 1,2,3,4,5,6; sleep 60"
check "qwen3-next opens" "wait_for 'attnwalk explore ·'"
fits=ok
for _ in $(seq 25); do
  sleep 0.2
  screen | python3 -c 'import sys; sys.exit(any(len(l.rstrip("\n")) > 80 for l in sys.stdin))' || fits="too wide: $(screen | head -n 1)"
  screen | tail -n 1 | grep -q 'q quit$' || fits="keys cut: $(screen | head -n 1)"
  tmux send-keys -t x s
done
check "qwen3-next: every step's screen fits 80 columns with its keys whole ($fits)" "[ '$fits' = ok ]"
tmux send-keys -t x s s s  # the gate: 24 features, more than fit
check "its scroll's place said whole" "wait_for 'attnwalk explore · gate' && wait_for '(arrows scroll)'"
tmux kill-session -t x

# the model view at 80×24: --layer and --head honoured on the grid of every layer; l/L listed and acting there
tmux new-session -d -s x -x 80 -y 24 "TERM=xterm-256color LANG=C.UTF-8 '$binary' explore model --model '$here/data/models/tiny_llama' --text 'the cat sat on the mat' --layer 2 --head 3 --view; sleep 60"
check "--view opens on the layer and head named (--layer 2 --head 3)" "wait_for 'attention_grid' && wait_for 'layer 2, head 3'"
tmux send-keys -t x '?'
check "its list of keys has l/L: two layers here" "wait_for 'next / previous layer'"
tmux send-keys -t x l
check "l: the next layer (wraps to layer 1), the list closed" "wait_for 'layer 1, head 3' && ! screen | grep -qF 'close this list'"
check "every line fits 80 columns" "screen | python3 -c 'import sys; sys.exit(any(len(l.rstrip(\"\\n\")) > 80 for l in sys.stdin))'"
tmux kill-session -t x

# signals: SIGTERM and SIGHUP restore the terminal and exit 128 + N, as a shell expects
for sig in TERM HUP; do
  rm -f "$work/explore.rc"
  tmux new-session -d -s x -x 80 -y 24 "TERM=xterm-256color LANG=C.UTF-8 '$binary' explore mha --heads 2; echo \$? > '$work/explore.rc'; sleep 60"
  check "opens (for SIG$sig)" "wait_for 'attnwalk explore · weights'"
  kill -$sig $(pgrep -P "$(tmux display -p -t x '#{pane_pid}')")  # the pane's shell's child: attnwalk
  for _ in $(seq 150); do [ -s "$work/explore.rc" ] && break; sleep 0.1; done
  want=$((128 + $(kill -l $sig)))
  check "SIG$sig exits $want" "[ \"\$(cat '$work/explore.rc' 2>/dev/null)\" = $want ]"
  check "SIG$sig restores the terminal" "! screen | grep -qF 'attnwalk explore ·'"
  tmux kill-session -t x
done

# bidirectional controls in tokens reach the screen as stand-ins, as in the text view
printf '{"tokens": ["a\u202eb", "\u2066c\u2069", "\u202bd"], "embeddings": [[1, 0], [0, 1], [1, 1]]}' > "$work/bidi.json"
tmux new-session -d -s x -x 80 -y 24 "TERM=xterm-256color LANG=C.UTF-8 '$binary' explore scores -i '$work/bidi.json'; sleep 60"
check "bidi tokens: the explorer opens" "wait_for 'attnwalk explore'"
check "bidi tokens: shown as \\u202E, \\u2066, \\u2069, \\u202B" "wait_for 'a\\u202Eb'"
check "no raw bidi control on the screen" "! screen | grep -qP '[\x{202A}-\x{202E}\x{2066}-\x{2069}]'"
tmux kill-session -t x

# a terminal type terminfo does not know: attnwalk's one line, not ncurses' own (on a
# terminal of python's making: the exit status straight from waitpid, no pane to wait for)
rc=$(python3 - "$binary" "$work/unknown_term.out" <<'EOF'
import os, pty, signal, sys
signal.alarm(60)
pid, fd = pty.fork()
if pid == 0:
    err = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(err, 2)
    os.execve(sys.argv[1], [sys.argv[1], "explore", "mha"], dict(os.environ, TERM="no-such-terminal", LANG="C.UTF-8"))
while True:
    try:
        if not os.read(fd, 4096): break
    except OSError:
        break
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
EOF
)
check "unknown TERM: exit 2 and attnwalk's line" "[ '$rc' = 2 ] && grep -q '^attnwalk: error: explore: the terminal type TERM=no-such-terminal' '$work/unknown_term.out'"
check "unknown TERM: not ncurses' message" "! grep -q 'Error opening terminal' '$work/unknown_term.out'"
[ "$failures" = 0 ] || { echo "exit status: $rc; stderr:"; cat "$work/unknown_term.out"; }

out=$(TERM=dumb "$binary" explore mha --heads 2 2>&1 </dev/null); rc=$?
check "no terminal: one line, exit 2" "[ $rc -eq 2 ] && [ \$(printf '%s\n' \"\$out\" | wc -l) -eq 1 ] && printf '%s' \"\$out\" | grep -qF 'explore needs a terminal'"
exit $((failures > 0))
