#!/usr/bin/env bash
# The gantry demo: starts the daemon on a temporary data directory, submits the
# example jobs in config/examples/, shows them, cancels one, and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh >/dev/null
BIN=build/bin/gantry

SIM=build/bin/gantry-sim

work=$(mktemp -d -t gantry-demo-XXXXXX)
daemon=""
sim=""
cleanup() {
  for p in $daemon $sim; do
    if kill -0 "$p" 2>/dev/null; then kill -TERM "$p"; wait "$p" 2>/dev/null || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "start three simulated worker clusters (Kubernetes + Kueue API over HTTPS)"
"$SIM" --clusters 3 --out-dir "$work/sim" >"$work/sim.log" 2>&1 &
sim=$!
for _ in $(seq 100); do [ -f "$work/sim/ready" ] && break; sleep 0.1; done
[ -f "$work/sim/ready" ] || { echo "the simulator did not start:"; cat "$work/sim.log"; exit 1; }
ls "$work/sim/clusters.d"

step "start the daemon (SQLite in $work/data, a free loopback port, those clusters)"
"$BIN" serve --data-dir "$work/data" --listen 127.0.0.1:0 --ready-file "$work/ready" \
  --clusters-dir "$work/sim/clusters.d" >"$work/gantry.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -s "$work/ready" ] && break; sleep 0.1; done
[ -s "$work/ready" ] || { echo "the daemon did not start:"; cat "$work/gantry.log"; exit 1; }
export GANTRY_SERVER="http://$(cat "$work/ready")"
echo "gantry is serving on $GANTRY_SERVER"

step "the clusters as gantry sees them (health, GPU quota and use)"
for _ in $(seq 50); do "$BIN" clusters 2>/dev/null | grep -q "Ready " && break; sleep 0.2; done
"$BIN" clusters

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

step "where could they run? (placement over the live inventory)"
echo "\$ gantry explain llama-ft -n team-a"
"$BIN" explain llama-ft -n team-a
echo "\$ gantry explain sweep-trial-7 -n team-a"
"$BIN" explain sweep-trial-7 -n team-a

step "cancel one"
"$BIN" cancel sweep-trial-7 -n team-a --wait --timeout 30
"$BIN" list -A

step "stop the daemon (SIGTERM: drain, close the store)"
kill -TERM "$daemon"; wait "$daemon" || true
daemon=""
tail -n 4 "$work/gantry.log"
cat <<'MSG'

Jobs stay Queued in this demo: creating their Workloads in the clusters,
taking the lease and running them is the dispatch engine's work, which is
not built yet.
MSG
