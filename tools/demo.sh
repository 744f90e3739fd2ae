#!/usr/bin/env bash
# The gantry demo: starts the daemon on a temporary data directory, submits the
# example jobs in config/examples/, shows them, cancels one, and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh >/dev/null
BIN=build/bin/gantry

work=$(mktemp -d -t gantry-demo-XXXXXX)
daemon=""
cleanup() {
  if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
    kill -TERM "$daemon"; wait "$daemon" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "start the daemon (SQLite in $work/data, a free loopback port)"
"$BIN" serve --data-dir "$work/data" --listen 127.0.0.1:0 --ready-file "$work/ready" \
  >"$work/gantry.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -s "$work/ready" ] && break; sleep 0.1; done
[ -s "$work/ready" ] || { echo "the daemon did not start:"; cat "$work/gantry.log"; exit 1; }
export GANTRY_SERVER="http://$(cat "$work/ready")"
echo "gantry is serving on $GANTRY_SERVER"

step "submit the example jobs"
for f in config/examples/*.yaml; do
  echo "\$ gantry submit -f $f"
  "$BIN" submit -f "$f"
done
echo "\$ gantry submit -f config/examples/llama-ft.yaml   # again: submission is idempotent"
"$BIN" submit -f config/examples/llama-ft.yaml

step "list every job"
"$BIN" list -A

step "one job in detail"
"$BIN" status llama-ft -n team-a

step "cancel one"
"$BIN" cancel sweep-trial-7 -n team-a --wait --timeout 30
"$BIN" list -A

step "stop the daemon (SIGTERM: drain, close the store)"
kill -TERM "$daemon"; wait "$daemon" || true
daemon=""
tail -n 4 "$work/gantry.log"
cat <<'MSG'

Jobs stay Queued in this demo: dispatching them to worker clusters (simulated
ones here) is the dispatch engine's work, which is not built yet.
MSG
