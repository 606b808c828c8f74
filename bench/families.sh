#!/usr/bin/env bash
# Reproduces the "Architecture families" section of BENCHMARKS.md: each family's ~1B `strata synth`
# preset (random weights), prefill pp128, decode tg128 and 16-stream batched decode, 2 threads.
#   bench/families.sh [DIR]
# Models are written once into DIR (default /tmp/strata-families; ~1 GB each at Q4_K). TYPE (default
# q4_k) is the weight type, PRESETS the presets to run, THREADS (default 2), R (default 2) the
# repetitions. Decode bandwidth is over the bytes a token reads (for MoE: the routed and shared
# experts only, `strata bench`'s weight_bytes). Needs a Release build in build/release and jq.
set -euo pipefail
DIR=${1:-/tmp/strata-families}
STRATA=${STRATA:-build/release/strata}
TYPE=${TYPE:-q4_k}
THREADS=${THREADS:-2}
R=${R:-2}
PRESETS=${PRESETS:-tinyllama-1.1b qwen3-0.6b qwen3-moe-tiny gemma2-2b gemma3-1b phi3-1b mixtral-tiny \
deepseek-v3-tiny gpt-oss-tiny olmo2-1b}
mkdir -p "$DIR"

echo "| preset | type | all weights GB | read per token GB | pp128 t/s | tg128 t/s | decode GB/s | of machine | 16 streams t/s | kernels |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
for preset in $PRESETS; do
  model="$DIR/$preset-$TYPE.gguf"
  [ -f "$model" ] || "$STRATA" synth --preset "$preset" --type "$TYPE" -o "$model" -t "$THREADS" 2>/dev/null
  single=$("$STRATA" bench -m "$model" -p 128 -n 128 -r "$R" -t "$THREADS" --json 2>/dev/null)
  batched=$("$STRATA" bench -m "$model" -p 128 -n 32 -r 1 -t "$THREADS" --parallel 16 --no-bandwidth --json \
    2>/dev/null)
  total=$(stat -c %s "$model")
  jq -r -n --argjson s "$single" --argjson b "$batched" --arg p "$preset" --arg t "$TYPE" --arg total "$total" \
    '($b.parallel[0].tg.tps_mean) as $bt |
     "| \($p) | \($t) | \($total | tonumber / 1e9 * 100 | round / 100) | \($s.weight_bytes / 1e9 * 100 | round / 100) | \($s.pp.tps_mean | . * 10 | round / 10) | \($s.tg.tps_mean | . * 10 | round / 10) | \($s.bandwidth.decode_gbps | . * 10 | round / 10) | \($s.bandwidth.fraction * 100 | round) % | \($bt | . * 10 | round / 10) | \($s.isa) |"'
done
echo
echo "CPU: $("$STRATA" bench -m "$DIR/$(echo $PRESETS | cut -d' ' -f1)-$TYPE.gguf" -p 0 -n 1 -r 1 --no-bandwidth --json 2>/dev/null | jq -r '.cpu + ", " + .cpu_features')"
