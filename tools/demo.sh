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
cat >"$work/gantry.yaml" <<EOF
clustersDir: $work/sim/clusters.d
probeIntervalSeconds: 1
# Short for the demo (the default is 15 minutes): a partitioned owner is
# given up after 5 s and its Requeue jobs move elsewhere.
clusterLostTimeoutSeconds: 5
# config/examples/trainjob.yaml runs a kind gantry has no adapter for.
genericKinds:
- {apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob}
EOF
"$BIN" serve --config "$work/gantry.yaml" --data-dir "$work/data" --listen 127.0.0.1:0 \
  --ready-file "$work/ready" >"$work/gantry.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -s "$work/ready" ] && break; sleep 0.1; done
[ -s "$work/ready" ] || { echo "the daemon did not start:"; cat "$work/gantry.log"; exit 1; }
export GANTRY_SERVER="http://$(cat "$work/ready")"
echo "gantry is serving on $GANTRY_SERVER"

step "the clusters as gantry sees them (health, GPU quota and use)"
for _ in $(seq 50); do [ "$("$BIN" clusters 2>/dev/null | grep -c ' Ready ')" -ge 3 ] && break; sleep 0.2; done
"$BIN" clusters

# A CPU job of the simulator's kind that runs for $2.
sim_job() {
  cat <<EOF
apiVersion: gantry.dev/v1
kind: Job
metadata: {name: $1, namespace: team-b}
spec:
  queue: team-b
  onClusterLoss: Requeue
  template:
    apiVersion: batch/v1
    kind: Job
    metadata:
      annotations: {sim.gantry.dev/duration: "$2"}
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - {name: main, image: registry.example.com/etl:2, resources: {requests: {cpu: "2", memory: 4Gi}}}
EOF
}

step "submit the example jobs, and three more"
for f in config/examples/*.yaml; do
  echo "\$ gantry submit -f $f"
  "$BIN" submit -f "$f"
done
echo "\$ gantry submit -f config/examples/llama-ft.yaml   # again: submission is idempotent"
"$BIN" submit -f config/examples/llama-ft.yaml
for job in "etl-short 4s" "etl-long 60s" "etl-moving 25s"; do
  set -- $job
  sim_job "$1" "$2" >"$work/$1.yaml"
  echo "\$ gantry submit -f $1.yaml   # runs $2"
  "$BIN" submit -f "$work/$1.yaml"
done

step "where could they run? (placement over the live inventory)"
echo "\$ gantry explain llama-ft -n team-a"
"$BIN" explain llama-ft -n team-a

phase_of() { "$BIN" status "$1" -n "$2" -o json | sed -n 's/.*"phase": *"\([A-Za-z]*\)".*/\1/p' | head -1; }
wait_phase() {  # NAME NS PHASE...: wait up to 60 s
  local name=$1 ns=$2; shift 2
  for _ in $(seq 300); do
    local p; p=$(phase_of "$name" "$ns")
    for want in "$@"; do [ "$p" = "$want" ] && return 0; done
    sleep 0.2
  done
  echo "$ns/$name did not reach $*"; return 1
}

step "dispatched: each job runs whole in one cluster that admitted it"
wait_phase etl-long team-b Running
wait_phase etl-moving team-b Running
"$BIN" list -A

step "cancel a running job: its remote objects are withdrawn"
"$BIN" cancel etl-long -n team-b --wait --timeout 30

owner=$("$BIN" status etl-moving -n team-b -o json | sed -n 's/.*"cluster": *"\([a-z0-9-]*\)".*/\1/p' | head -1)
step "partition $owner, the cluster running etl-moving: after 5 s it moves, at epoch 2"
"$SIM" ctl --out-dir "$work/sim" partition "$owner" >/dev/null
for _ in $(seq 300); do
  "$BIN" status etl-moving -n team-b -o json | grep -q '"epoch": *2' && break
  sleep 0.2
done
wait_phase etl-moving team-b Running Succeeded
"$BIN" status etl-moving -n team-b
echo "\$ gantry-sim ctl heal $owner   # the zombie copy at epoch 1 is deleted on sight"
"$SIM" ctl --out-dir "$work/sim" heal "$owner" >/dev/null

step "let everything finish"
for j in "llama-ft team-a" "batch-infer team-b" "sweep-trial-7 team-a" "trainjob-mnist team-a" "etl-short team-b" "etl-moving team-b"; do
  set -- $j
  wait_phase "$1" "$2" Succeeded Failed Unschedulable Cancelled || true
done
"$BIN" list -A
# A job placed in the partitioned cluster beside etl-moving shares its fate:
# batch-infer asks for onClusterLoss: Fail (at-most-once), so if placement put
# it there, gantry fails it rather than risk a second run. Say why a job
# failed, in gantry's own words.
for j in "llama-ft team-a" "batch-infer team-b" "sweep-trial-7 team-a" "trainjob-mnist team-a" "etl-short team-b"; do
  set -- $j
  [ "$(phase_of "$1" "$2")" = Failed ] || continue
  why=$("$BIN" status "$1" -n "$2" -o json | sed -n 's/^ *"message": *"\(.*\)",*$/\1/p' | head -1)
  echo "-> $2/$1 Failed: ${why:-no message}"
done

step "the simulator's run journal: did any job run twice at once?"
# etl-moving asked for onClusterLoss: Requeue (the default), which trades
# at-most-once for progress: its epoch-1 run in the cut-off cluster cannot be
# stopped until the cluster answers again, so it overlaps the epoch-2 run, and
# the check says so. The same holds for any other Requeue job that placement
# happened to put in $owner. Any other finding is a real violation and fails
# the demo.
echo "\$ gantry-sim ctl check"
findings=$("$SIM" ctl --out-dir "$work/sim" check 2>&1) || true
echo "$findings"
cut_off_run="in $owner \\([^)]*, epoch 1\\)"
other_run="in [a-z0-9-]* \\([^)]*, epoch 2\\)"
# The whole line: a job that is also at-most-once, or ran more than twice,
# says more, and is a real violation.
overlap="^VIOLATION [^ ]*: job [^ ]* ran twice at once: ($cut_off_run and $other_run|$other_run and $cut_off_run)\$"
allowed=$(printf '%s\n' "$findings" | grep '^VIOLATION' | grep -E "$overlap" || true)
unexpected=$(printf '%s\n' "$findings" | grep '^VIOLATION' | grep -v -E "$overlap" || true)
if [ -n "$unexpected" ]; then
  echo "demo: FAILED: a job ran where or when its lease did not allow"
  exit 1
fi
if [ -n "$allowed" ]; then
  echo "-> only Requeue jobs that were running in $owner when it was cut off (etl-moving, and any other"
  echo "   placed there): each epoch-1 run could not be stopped while $owner was unreachable, and was"
  echo "   deleted when the partition healed. A job that must never run twice sets onClusterLoss: Fail"
  echo "   or Wait (at-most-once; the check enforces it)."
else
  echo "-> no job ran in two places at once"
fi

step "stop the daemon (SIGTERM: drain, close the store)"
kill -TERM "$daemon"; wait "$daemon" || true
daemon=""
tail -n 3 "$work/gantry.log"
