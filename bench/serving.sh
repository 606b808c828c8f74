#!/usr/bin/env bash
# Reproduces the "Serving" section of BENCHMARKS.md: `strata serve` driven by `strata bench serve`.
#   bench/serving.sh MODEL [OUT_DIR]
# SECTIONS (default "levels prefix variable") picks the tables to run; "spec" compares
# speculative decoding off and on (SPEC, default "ngram") at 1, 4, 16 and 64 streams
# (SPEC_LEVELS, "streams:prompts" pairs; SPEC_MODES, default "off on", the sides to run;
# INPUT_LEN / OUTPUT_LEN, default 128, the tokens per request).
# Needs a Release build in build/release and jq. Writes one JSON per run into OUT_DIR
# (default /tmp/strata-serving) and prints markdown tables on stdout.
set -euo pipefail
MODEL=${1:?usage: bench/serving.sh MODEL [OUT_DIR]}
OUT=${2:-/tmp/strata-serving}
STRATA=${STRATA:-build/release/strata}
PORT=${PORT:-18080}
URL=http://127.0.0.1:$PORT
SECTIONS=${SECTIONS:-levels prefix variable}
mkdir -p "$OUT"
has() { [[ " $SECTIONS " == *" $1 "* ]]; }

server_pid=""
start_server() {  # args: extra serve flags
  "$STRATA" serve -m "$MODEL" --port "$PORT" -t 2 --kv-cache-mem 2GiB --max-num-seqs 64 \
    --max-batched-tokens 512 "$@" 2>"$OUT/serve.log" &
  server_pid=$!
  for _ in $(seq 1 3000); do  # 5 minutes: a self-draft is re-quantized at load
    curl -sf "$URL/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server did not become ready" >&2
  exit 1
}
stop_server() {
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
}
trap stop_server EXIT

# Samples /debug/stats while a run is going: prints the mean KV waste over samples with blocks in use.
sample_waste() {  # args: file to append samples to; runs until killed
  while true; do
    curl -sf "$URL/debug/stats" | jq -r 'select(.kv_blocks_used > 0) | .kv_waste' >>"$1" || true
    sleep 0.25
  done
}

run_level() {  # args: scheduler concurrency num_prompts
  local sched=$1 conc=$2 n=$3 tag="$1-c$2-r${RANGE_RATIO:-0}"
  : >"$OUT/$tag.waste"
  sample_waste "$OUT/$tag.waste" &
  local sampler=$!
  "$STRATA" bench serve --url "$URL" --num-prompts "$n" --max-concurrency "$conc" \
    --input-len 128 --output-len 128 --range-ratio "${RANGE_RATIO:-0}" --ignore-eos --seed 1 --quiet \
    --json "$OUT/$tag.json" >/dev/null
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  local waste
  waste=$(awk '{s += $1; n++} END {if (n) printf "%.1f", 100 * s / n; else print "n/a"}' "$OUT/$tag.waste")
  jq -r --arg s "$sched" --arg c "$conc" --arg w "$waste" \
    '"| \($s) | \($c) | \(.completed)/\(.completed + .failed) | \(.output_throughput | . * 10 | round / 10) | \(.ttft_ms.median | round) | \(.ttft_ms.p99 | round) | \(.itl_ms.median | . * 10 | round / 10) | \(.itl_ms.p99 | round) | \(.tpot_ms.median | . * 10 | round / 10) | \($w) |"' \
    "$OUT/$tag.json"
}

header() {
  echo "| scheduler | streams | ok | output tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | TPOT p50 ms | KV waste % |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
}
if has levels; then
  header
  for sched in continuous static; do
    start_server --scheduler "$sched"
    for spec in 1:8 4:16 16:48 64:128; do
      run_level "$sched" "${spec%%:*}" "${spec##*:}"
    done
    stop_server
  done
fi

# Input and output lengths spread uniformly over [32, 224] (--range-ratio 0.75): 16 streams,
# 64 requests.
if has variable; then
  echo
  header
  for sched in continuous static; do
    start_server --scheduler "$sched"
    RANGE_RATIO=0.75 run_level "$sched" 16 64
    stop_server
  done
fi

# Shared 1,000-word system prompt (one token per word with these vocabularies), 32 unique words
# per request, 16 output tokens, one request at a time: TTFT with prefix caching on and off.
if has prefix; then
  echo
  echo "| prefix caching | requests | prompt tokens (mean) | TTFT mean ms | TTFT p50 ms | TTFT p99 ms | prefix hit rate |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  for mode in on off; do
    if [ "$mode" = on ]; then start_server; else start_server --no-prefix-caching; fi
    "$STRATA" bench serve --url "$URL" --num-prompts 16 --max-concurrency 1 --prefix-len 1000 \
      --input-len 32 --output-len 16 --ignore-eos --seed 2 --quiet --json "$OUT/prefix-$mode.json" >/dev/null
    hits=$(curl -sf "$URL/debug/stats" | jq -r 'if .prefix_queries > 0 then (100 * .prefix_hits / .prefix_queries | . * 10 | round / 10 | tostring) + " %" else "n/a" end')
    jq -r --arg m "$mode" --arg h "$hits" \
      '"| \($m) | \(.completed) | \(.total_input_tokens / .completed | round) | \(.ttft_ms.mean | round) | \(.ttft_ms.median | round) | \(.ttft_ms.p99 | round) | \($h) |"' \
      "$OUT/prefix-$mode.json"
    stop_server
  done
fi

# Speculative decoding off and on (--spec $SPEC), continuous scheduling, 1/4/16/64 streams, the
# workload at temperature 0 so that n-gram drafts have repeats to find. Off and on alternate per
# level (a fresh server each run), so that a change of machine load hits both sides alike.
if has spec; then
  echo
  echo "| speculation | streams | ok | output tok/s | TTFT p50 ms | ITL p50 ms | TPOT p50 ms | acceptance |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  for lvl in ${SPEC_LEVELS:-1:8 4:16 16:48 64:128}; do
    conc=${lvl%%:*} n=${lvl##*:}
    for mode in ${SPEC_MODES:-off on}; do
      if [ "$mode" = on ]; then start_server --spec "${SPEC:-ngram}"; else start_server; fi
      "$STRATA" bench serve --url "$URL" --num-prompts "$n" --max-concurrency "$conc" \
        --input-len "${INPUT_LEN:-128}" --output-len "${OUTPUT_LEN:-128}" --ignore-eos --seed 1 --quiet --json "$OUT/spec-$mode-c$conc.json" >/dev/null
      jq -r --arg m "$mode" --arg c "$conc" \
        '"| \($m) | \($c) | \(.completed)/\(.completed + .failed) | \(.output_throughput | . * 10 | round / 10) | \(.ttft_ms.median | round) | \(.itl_ms.median | . * 10 | round / 10) | \(.tpot_ms.median | . * 10 | round / 10) | \(if .spec then (.spec.acceptance_rate | . * 1000 | round / 10 | tostring) + " %" else "-" end) |"' \
        "$OUT/spec-$mode-c$conc.json"
      stop_server
    done
  done
fi
