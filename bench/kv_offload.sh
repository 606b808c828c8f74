#!/usr/bin/env bash
# TTFT of a long shared prefix after a server restart, with the disk tier (--kv-offload-dir):
# run 1 starts on an empty directory (cold prefill), the server is stopped and started again
# on the same directory, and run 2 sends a prompt with the same prefix and another tail.
#   bench/kv_offload.sh MODEL.gguf OUT_DIR [PREFIX_WORDS]
# The prompt's token count is in the /metrics lines printed at the end (prefix_cache_queries).
set -euo pipefail
MODEL=$1
OUT=$2
PREFIX=${3:-2000}
STRATA=${STRATA:-build/release/strata}
PORT=${PORT:-18431}
URL="http://127.0.0.1:$PORT"
mkdir -p "$OUT"
TIER="$OUT/kv-tier"
rm -rf "$TIER"

start_server() {
  "$STRATA" serve -m "$MODEL" --port "$PORT" -t 2 --kv-cache-mem 1GiB --max-batched-tokens 512 \
    --kv-offload-dir "$TIER" --kv-offload-disk 2GiB 2>>"$OUT/serve.log" &
  server_pid=$!
  for _ in $(seq 1 1200); do
    curl -sf "$URL/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server did not start" >&2
  exit 1
}
stop_server() {
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
}
# Two one-line datasets: the same random-word prefix, different 16-word tails.
python3 - "$PREFIX" "$OUT" <<'PY'
import json, random, sys
n, out = int(sys.argv[1]), sys.argv[2]
words = "time day girl boy dog cat tree park ball sun sky house mom dad friend happy big little red blue".split()
rng = random.Random(1)
prefix = " ".join(rng.choice(words) for _ in range(n))
for name in ("cold", "restart"):
    tail = " ".join(rng.choice(words) for _ in range(16))
    with open(f"{out}/{name}.jsonl", "w") as f:
        f.write(json.dumps({"prompt": prefix + " " + tail, "output_len": 4}) + "\n")
PY
run() {  # args: name
  "$STRATA" bench serve --url "$URL" --dataset "$OUT/$1.jsonl" --num-prompts 1 --max-concurrency 1 --ignore-eos --quiet \
    --json "$OUT/$1.json" >/dev/null
  jq -r '"TTFT \(.ttft_ms.mean) ms"' "$OUT/$1.json"
}

start_server
echo "cold (empty tier directory):"
run cold
stop_server
echo "tier files: $(ls "$TIER" | wc -l), $(du -sh "$TIER" | cut -f1)"
start_server
echo "after restart, same prefix, another tail:"
run restart
curl -sf "$URL/metrics" | grep -E '^strata:(kv_offload_disk_(hits|read_bytes|read_seconds)_total|prefix_cache_hits_total|prefix_cache_queries_total) '
stop_server
