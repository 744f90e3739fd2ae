#!/usr/bin/env bash
# The submission benchmark: a real `gantry serve` and the baseline server, on
# the same disk, each loaded by submit_loadgen; prints both and their ratio,
# then the latency of gantry at half of its measured rate.
#
#   bench/submit_bench.sh [BUILD_DIR] [CONNECTIONS] [REQUESTS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
CONNS=${2:-64}
REQS=${3:-100000}
BIN=$BUILD/bin
work=$(mktemp -d -p "${BENCH_DIR:-$PWD}" .bench-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

wait_ready() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done; echo "not ready: $1"; exit 1; }
rate_of() { sed -n 's/.*durable_per_s=\([0-9]*\).*/\1/p'; }

"$BIN/baseline_server" "$work/baseline.db" "$work/baseline.ready" & pids+=($!)
wait_ready "$work/baseline.ready"
echo "baseline (HTTP + group-committed SQLite insert):"
base=$("$BIN/submit_loadgen" "$(cat "$work/baseline.ready")" "$CONNS" "$REQS")
echo "  $base"

"$BIN/gantry" serve --data-dir "$work/gantry" --listen 127.0.0.1:0 --ready-file "$work/gantry.ready" \
  --log-level warn 2>"$work/gantry.log" & pids+=($!)
wait_ready "$work/gantry.ready"
echo "gantry serve (auth, validation, normalization, record, response):"
full=$("$BIN/submit_loadgen" "$(cat "$work/gantry.ready")" "$CONNS" "$REQS")
echo "  $full"
b=$(echo "$base" | rate_of); g=$(echo "$full" | rate_of)
echo "gantry / baseline = $(awk -v g="$g" -v b="$b" 'BEGIN { printf "%.0f%%", 100 * g / b }')"

half=$((g / 2))
echo "gantry at half that rate ($half/s, latency from the scheduled send time):"
# New names: the first run's jobs are already stored and would be 409s.
"$BIN/gantry" cancel x >/dev/null 2>&1 || true
kill -TERM "${pids[1]}"; wait "${pids[1]}" || true
rm -rf "$work/gantry"; rm -f "$work/gantry.ready"
"$BIN/gantry" serve --data-dir "$work/gantry" --listen 127.0.0.1:0 --ready-file "$work/gantry.ready" \
  --log-level warn 2>>"$work/gantry.log" & pids[1]=$!
wait_ready "$work/gantry.ready"
echo "  $("$BIN/submit_loadgen" "$(cat "$work/gantry.ready")" "$CONNS" "$((half * 10))" "$half")"
