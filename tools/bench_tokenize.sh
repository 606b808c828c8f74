#!/usr/bin/env bash
# Tokenization speed on 1 MiB of English text, one core: prints one JSON object per vocabulary.
#
# Usage: tools/bench_tokenize.sh [STRATA_BINARY] [SHARED_DIR]
# The text is the English licence texts Debian ships in /usr/share/common-licenses, repeated to
# 1 MiB. Each vocabulary is timed 3 times (the tokenize command reports the encode time alone on
# stderr, as wall and as thread CPU time) and the best CPU time is kept; the CPU time is what one
# core needs, the wall time also counts waiting for the core on a busy machine.
set -euo pipefail
STRATA=${1:-build/release/strata}
SHARED=${2:-../shared}
TEXT=$(mktemp /tmp/strata_bench_text.XXXXXX)
trap 'rm -f "$TEXT"' EXIT
while [ "$(stat -c %s "$TEXT")" -lt 1048576 ]; do
  cat /usr/share/common-licenses/GPL-3 /usr/share/common-licenses/Apache-2.0 >> "$TEXT"
done
truncate -s 1048576 "$TEXT"
for vocab in llama-spm gpt-2 deepseek-llm falcon starcoder; do
  best_cpu=1e9
  best_wall=1e9
  ids=0
  for run in 1 2 3; do
    vocab_file="$SHARED/vocab/ggml-vocab-$vocab.gguf"
    line=$(taskset -c 0 "$STRATA" tokenize -m "$vocab_file" -f "$TEXT" 2>&1 >/dev/null | grep 'tokenize:')
    ids=$(sed -E 's/.*-> ([0-9]+) tokens.*/\1/' <<<"$line")
    wall=$(sed -E 's/.* in ([0-9.e+-]+) ms wall.*/\1/' <<<"$line")
    cpu=$(sed -E 's/.* ms wall, ([0-9.e+-]+) ms cpu.*/\1/' <<<"$line")
    best_cpu=$(awk -v a="$best_cpu" -v b="$cpu" 'BEGIN { print (b < a ? b : a) }')
    best_wall=$(awk -v a="$best_wall" -v b="$wall" 'BEGIN { print (b < a ? b : a) }')
  done
  printf '{"vocab": "%s", "bytes": 1048576, "tokens": %s, "cpu_ms": %s, "wall_ms": %s, "mib_per_cpu_s": %.2f}\n' \
    "$vocab" "$ids" "$best_cpu" "$best_wall" "$(awk -v c="$best_cpu" 'BEGIN { print 1000 / c }')"
done
