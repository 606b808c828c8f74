#!/usr/bin/env bash
# Reproduces the "Speculative decoding" section of BENCHMARKS.md: batch-1 decode of one model with
# speculation off and with each drafter, alternating, through `strata bench --spec`.
#   bench/speculative.sh MODEL PROMPT_FILE [SPEC...]
# SPEC entries are --spec values, optionally followed by extra flags after '@', e.g.
# "self:q4_0" or "self:q4_0@--draft-p-min 0". Default: "self:q4_0" "self:q4_0@--draft-p-min 0"
# "ngram". N (default 64) tokens per run, R (default 2) repetitions, THREADS (default 2).
# Needs a Release build in build/release and jq; prints one markdown table on stdout.
set -euo pipefail
MODEL=${1:?usage: bench/speculative.sh MODEL PROMPT_FILE [SPEC...]}
PROMPT=${2:?usage: bench/speculative.sh MODEL PROMPT_FILE [SPEC...]}
shift 2
SPECS=("$@")
[ ${#SPECS[@]} -eq 0 ] && SPECS=("self:q4_0" "self:q4_0@--draft-p-min 0" "ngram")
STRATA=${STRATA:-build/release/strata}
N=${N:-64}
R=${R:-2}
THREADS=${THREADS:-2}

run() {  # args: label, extra bench flags...
  local label=$1
  shift
  "$STRATA" bench -m "$MODEL" -p 0 -n "$N" -r "$R" -f "$PROMPT" -t "$THREADS" --no-bandwidth --json "$@" \
    2>/dev/null | jq -r --arg l "$label" \
    '[$l, (.tg.tps_mean*100|round/100), (.tg.tps_std*100|round/100),
      (if .tg.spec then (.tg.spec.acceptance_rate*1000|round/10) else "-" end),
      (if .tg.spec then (.tg.spec.mean_acceptance_length*100|round/100) else "-" end),
      (if .tg.spec then (.tg.spec.time_share.draft*100|round) else "-" end), .cpu, .isa] | @tsv'
}

echo "| drafter | decode t/s | ± | accepted % | mean acceptance length | draft time % | cpu | kernels |"
echo "|---|---:|---:|---:|---:|---:|---|---|"
for spec in "${SPECS[@]}"; do
  # Alternate: a plain run next to every speculative one, so the machine's load hits both alike.
  run "off" | tr '\t' '|' | sed 's/^/|/; s/$/|/'
  flags=()
  [[ "$spec" == *@* ]] && read -r -a flags <<<"${spec#*@}"
  run "${spec}" --spec "${spec%%@*}" "${flags[@]}" | tr '\t' '|' | sed 's/^/|/; s/$/|/'
done
