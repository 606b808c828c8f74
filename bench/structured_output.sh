#!/usr/bin/env bash
# Output throughput of N concurrent streams with and without a structured-output constraint:
# `strata serve` driven by `strata bench serve` (--extra-body carries the constraint).
#   bench/structured_output.sh MODEL [OUT_DIR]
# The model should have a real vocabulary (masks cost what the vocabulary makes them cost);
# ROUNDS (default 3) interleaves the configurations so drift on a shared machine hits all alike.
# Needs a Release build in build/release and jq. Prints a markdown table on stdout.
set -euo pipefail
MODEL=${1:?usage: bench/structured_output.sh MODEL [OUT_DIR]}
OUT=${2:-/tmp/strata-structured}
STRATA=${STRATA:-build/release/strata}
PORT=${PORT:-18090}
URL=http://127.0.0.1:$PORT
CONC=${CONC:-16}
OUTPUT_LEN=${OUTPUT_LEN:-64}
ROUNDS=${ROUNDS:-3}
# Sent with every configuration. top_k bounds the sampler's sort: without it the sampler sorts
# the whole vocabulary per token, which makes unconstrained sampling slower than constrained.
COMMON=${COMMON:-'{"top_k": 40}'}
mkdir -p "$OUT"

# No prefix caching: every configuration prefills its prompts (the runs reuse the same ones).
"$STRATA" serve -m "$MODEL" --port "$PORT" -t "${THREADS:-2}" --kv-cache-mem 2GiB --max-num-seqs 64 \
  --no-prefix-caching 2>"$OUT/serve.log" &
server_pid=$!
trap 'kill -TERM $server_pid 2>/dev/null || true; wait $server_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do curl -sf "$URL/health" >/dev/null 2>&1 && break; sleep 0.1; done

# Schemas that cannot be complete within OUTPUT_LEN tokens (minItems), so every stream writes
# the same number of tokens: one mostly structure (keys, integers, enums, numbers, short
# strings), one mostly free text (strings: the widest masks).
ROWS='{"type":"array","minItems":64,"items":{"type":"object","properties":{"id":{"type":"integer","minimum":0,"maximum":99999},"kind":{"enum":["alpha","beta","gamma"]},"score":{"type":"number","minimum":0,"maximum":1},"tag":{"type":"string","maxLength":12}},"required":["id","kind","score","tag"],"additionalProperties":false}}'
TEXTS='{"type":"array","minItems":64,"items":{"type":"string"}}'
schema_body() { echo "{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"$1\",\"schema\":$2}}}"; }
declare -A BODY=([none]='{}' [rows]="$(schema_body rows "$ROWS")" [texts]="$(schema_body texts "$TEXTS")")
CONFIGS=(none rows texts)

run() {  # args: config round
  local extra=(--extra-body "$(jq -cn --argjson a "$COMMON" --argjson b "${BODY[$1]}" '$a + $b')")
  # ignore_eos: every stream writes OUTPUT_LEN tokens unless its constraint completes first.
  "$STRATA" bench serve --url "$URL" --num-prompts "$CONC" --max-concurrency "$CONC" --input-len 32 \
    --output-len "$OUTPUT_LEN" --ignore-eos --temperature 1 --seed "$2" --quiet "${extra[@]}" \
    --json "$OUT/$1-$2.json" >/dev/null
}
for r in $(seq 1 "$ROUNDS"); do
  for c in "${CONFIGS[@]}"; do run "$c" "$r"; done
done

echo "| constraint | output tok/s (median of $ROUNDS) | vs none | TPOT ms (median) | completed | mean output tokens |"
echo "|---|---|---|---|---|---|"
base=""
for c in "${CONFIGS[@]}"; do
  median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  med=$(for r in $(seq 1 "$ROUNDS"); do jq .output_throughput "$OUT/$c-$r.json"; done | median)
  tpot=$(for r in $(seq 1 "$ROUNDS"); do jq .tpot_ms.median "$OUT/$c-$r.json"; done | median)
  [[ -z "$base" ]] && base=$med
  jq -r --arg c "$c" --arg m "$med" --arg b "$base" --arg t "$tpot" \
    '"| \($c) | \($m | tonumber | . * 10 | round / 10) | \(($m | tonumber) / ($b | tonumber) | . * 100 | round / 100) | \($t | tonumber | round) | \(.completed)/\(.completed + .failed) | \(.total_output_tokens / .completed | round) |"' \
    "$OUT/$c-1.json"
done
