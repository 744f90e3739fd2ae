#!/usr/bin/env bash
# The dispatch benchmark, end to end through real processes: gantry-sim runs
# 10 simulated Kueue clusters over HTTPS, `gantry serve` dispatches to them,
# and dispatch_loadgen submits short jobs (one 100m/128Mi pod, 200 ms) and
# waits until every one is Succeeded. First a line of what a syscall, a
# thread wake-up and an fdatasync cost on this machine (machine_probe), and
# what a bare HTTPS round trip costs in CPU (transport_floor), then
# three runs, each on a fresh simulator and a fresh daemon:
#
#   AllAtOnce    JOBS jobs as fast as CONNS connections post them
#   Incremental  the same, dispatch {mode: Incremental, stepSize: 3, roundSeconds: 60}
#   paced        RATE jobs/s for PACED_SECONDS s, once per mode in PACED_MODES: latency at that rate
#   rest         only when SCENARIOS names it: REST_JOBS AllAtOnce jobs of a node's CPU for an hour,
#                4 run per cluster and the rest wait; then REST_SECONDS of rest: passes/s and CPU
#
# Each run prints submitted and dispatched jobs/s, latency from the post to
# LeaseTaken and to the job running on its owner, the time until all are
# Succeeded, remote API calls and reconciler passes per job, the CPU seconds
# (user and system) and peak resident memory of each process (and gantry's
# anonymous and file-backed memory at the end), how the
# machine's CPU time went meanwhile (steal: taken by the hypervisor), and
# `gantry-sim ctl check` (no job ran twice). Then the issue's targets.
#
#   bench/dispatch_bench.sh [BUILD_DIR] [JOBS] [RATE]
#   env: CLUSTERS (10: the fleet's size; e.g. 100 shows what grows with it), CONNS (16), DISPATCH_WORKERS (the daemon's default), SCENARIOS (e.g. 'allatonce paced'; all but rest), PACED_SECONDS (5), REST_JOBS (2000), REST_SECONDS (60), REST_SETTLE_SECONDS (5), PACED_MODES ('AllAtOnce Incremental'), KEEP_ON_FAILURE (keep the work directory when a run fails), BENCH_DIR (where the temp dir goes),
#        EXTRA_CONFIG (lines added to gantry.yaml, e.g. "resyncPassesPerSecond: 0"),
#        SIM_CTL (gantry-sim ctl commands run once the simulator is up, ';' between them, e.g. "errors c1 0.2 429"),
#        SIM_CTL_DURING (the same, run SIM_CTL_AFTER_S (1) seconds after the load starts, e.g. "latency c1 15000": a cluster that stalls mid-run),
#        SIM_LATENCY_MS (every cluster answers each request this much later, as a distant one would; what the request does, and its watch events, are not delayed),
#        PROFILE=DIR (perf record both processes during each run into DIR/NAME.{gantry,sim}.data),
#        PROFILE_CALLGRAPH (perf record call-graph option, default -g; e.g. "--call-graph dwarf,8192"), PROFILE_FREQ (samples a second, default 499)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
JOBS=${2:-2000}
RATE=${3:-500}
CONNS=${CONNS:-16}
# Short: above the sustainable rate the backlog, not the length, sets the p99,
# and every extra second of posts costs several seconds of draining.
PACED_SECONDS=${PACED_SECONDS:-5}
PACED_MODES=${PACED_MODES:-${PACED_MODE:-AllAtOnce Incremental}}
CLUSTERS=${CLUSTERS:-10}
# The issue's targets.
TARGET_DISPATCH_PER_S=1000
TARGET_P99_MS=250
BIN=$BUILD/bin
for b in gantry gantry-sim dispatch_loadgen; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b: ninja -C $BUILD gantry gantry-sim dispatch_loadgen machine_probe transport_floor"; exit 2; }
done
work=$(mktemp -d -p "${BENCH_DIR:-$PWD}" .bench-XXXXXX)
pids=()
stop() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
failed=0  # a scenario's load generator failed: KEEP_ON_FAILURE=1 keeps $work (logs, store, sim) to look at
cleanup() {
  for p in "${pids[@]}"; do stop "$p"; done
  if [ "$failed" = 1 ] && [ -n "${KEEP_ON_FAILURE:-}" ]; then echo "kept for inspection: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

wait_ready() { for _ in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.05; done; echo "not ready: $1"; exit 1; }
# CPU seconds (user + system, all threads) a live process has used.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f (user %.1f, system %.1f)", ($14 + $15) / hz, $14 / hz, $15 / hz }' "/proc/$1/stat"; }
# KiB a live process wrote with write(2)/pwrite(2) (the store's WAL and
# database, the log; not its sockets, which use send), per job.
written_kib_per_job() { awk -v n="$2" '/^wchar:/ { printf "%.1f", $2 / 1024 / n }' "/proc/$1/io"; }
# Context switches (voluntary and not) of a live process's threads, per job:
# each is a trip through the scheduler, and on a virtual machine a costly one.
switches_per_job() {
  cat /proc/"$1"/task/*/status 2>/dev/null |
    awk -v n="$2" '/^(non)?voluntary_ctxt_switches:/ { s += $2 } END { printf "%.1f", s / n }'
}
# Context switches per job of a live process's threads, summed by thread
# name as cpu_by_thread does: which hand-offs cost the trips.
switches_by_thread() {
  for t in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr ' ' '_' <"$t/comm" 2>/dev/null)" \
      "$(awk '/^(non)?voluntary_ctxt_switches:/ { s += $2 } END { print s + 0 }' "$t/status" 2>/dev/null)"
  done | awk -v n="$2" '
    { k = $1; sub(/^watch-.*/, "watch", k); sub(/[-_]?[0-9]+$/, "", k); c[k] += $2 }
    END { for (k in c) if (c[k] > 0) printf "%s %.1f\n", k, c[k] / n }' |
    sort -k2 -nr | head -8 | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 } END { print "" }'
}
# CPU seconds of a live process's threads, summed by thread name (numbers
# and the cluster after "watch-" dropped), largest first: where the time goes.
cpu_by_thread() {
  for t in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr ' ' '_' <"$t/comm" 2>/dev/null)" "$(cut -d')' -f2 "$t/stat" 2>/dev/null | awk '{ print $12 + $13 }')"
  done | awk -v hz="$(getconf CLK_TCK)" '
    { n = $1; sub(/^watch-.*/, "watch", n); sub(/[-_]?[0-9]+$/, "", n); c[n] += $2 }
    END { for (n in c) if (c[n] > 0) printf "%s %.2f\n", n, c[n] / hz }' |
    sort -k2 -nr | head -8 | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 } END { print "" }'
}
# Writes to objects so far, summed over the simulated clusters (each
# cluster's resourceVersion counts them).
sim_writes() {
  "$BIN/gantry-sim" ctl --out-dir "$1" clusters 2>/dev/null |
    grep -o '"resourceVersion": *[0-9]*' | awk -F: '{ s += $2 } END { print s + 0 }'
}
# The machine's CPU counters (/proc/stat's first line: user nice system idle
# iowait irq softirq steal), to compare two moments with host_shares.
cpu_counters() { head -1 /proc/stat | cut -d' ' -f3-10; }
# How the whole machine's CPU time went between two cpu_counters: steal is
# time the hypervisor gave to other guests (on a shared host it can take
# a third of the cores and more, and every figure above moves with it).
host_shares() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    n = split(a, x, " "); split(b, y, " ")
    for (i = 1; i <= n; i++) { d[i] = y[i] - x[i]; t += d[i] }
    if (t <= 0) { print "?"; exit }
    printf "busy %.0f%%, idle %.0f%%, iowait %.0f%%, steal %.0f%% (taken by the hypervisor)",
      100 * (d[1] + d[2] + d[3] + d[6] + d[7]) / t, 100 * d[4] / t, 100 * d[5] / t, 100 * d[8] / t }'
}
# Peak resident memory of a live process, in MiB.
peak_mib() { awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
# Resident memory now, split: anonymous (heaps, stacks, buffers: what grows
# if something leaks) and file-backed (gantry's mapped database: it grows
# with the store, and the kernel can drop it).
rss_split() { awk '/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } END { printf "%.0f MiB anonymous, %.0f MiB file-backed", a / 1024, f / 1024 }' "/proc/$1/status"; }
field() { sed -n "s/^result.* $1=\([-0-9.]*\).*/\1/p"; }

# scenario NAME MODE JOBS [RATE]: prints the figures; the loadgen's result line goes to $work/NAME.result.
scenario() {
  local name=$1 mode=$2 jobs=$3 rate=${4:-}
  local d=$work/$name
  mkdir -p "$d"
  "$BIN/gantry-sim" --clusters "$CLUSTERS" --out-dir "$d/sim" >"$d/sim.log" 2>&1 & local sim=$!
  pids+=("$sim")
  wait_ready "$d/sim/ready"
  # SIM_LATENCY_MS: every answer of every cluster this much later, as a
  # distant cluster's; then SIM_CTL's own commands, e.g. "errors c1 0.2 429".
  local cmd ctl="" cmds=()
  if [ "${SIM_LATENCY_MS:-0}" != 0 ]; then
    for ((i = 1; i <= CLUSTERS; i++)); do ctl+="latency c$i $SIM_LATENCY_MS;"; done
  fi
  IFS=';' read -ra cmds <<<"$ctl${SIM_CTL:-}"
  for cmd in "${cmds[@]}"; do
    [ -n "${cmd// /}" ] || continue
    # shellcheck disable=SC2086
    "$BIN/gantry-sim" ctl --out-dir "$d/sim" $cmd >/dev/null || { echo "gantry-sim ctl $cmd failed"; exit 1; }
  done
  cat >"$d/gantry.yaml" <<EOF
clustersDir: $d/sim/clusters.d
probeIntervalSeconds: 1
logLevel: warn
jobsMetricSeconds: 0  # the load generator sees the jobs finish in gantry_jobs
${DISPATCH_WORKERS:+dispatchWorkers: $DISPATCH_WORKERS}
${EXTRA_CONFIG:-}
EOF
  "$BIN/gantry" serve --config "$d/gantry.yaml" --data-dir "$d/data" --listen 127.0.0.1:0 \
    --ready-file "$d/gantry.ready" 2>"$d/gantry.log" & local daemon=$!
  pids+=("$daemon")
  wait_ready "$d/gantry.ready"
  local t0 rc=0 perf_pids=()
  if [ -n "${PROFILE:-}" ]; then
    mkdir -p "$PROFILE"
    perf record -q -e cpu-clock -F "${PROFILE_FREQ:-499}" ${PROFILE_CALLGRAPH:--g} -p "$daemon" -o "$PROFILE/$name.gantry.data" >/dev/null 2>&1 &
    perf_pids+=($!)
    perf record -q -e cpu-clock -F "${PROFILE_FREQ:-499}" ${PROFILE_CALLGRAPH:--g} -p "$sim" -o "$PROFILE/$name.sim.data" >/dev/null 2>&1 &
    perf_pids+=($!)
    pids+=("${perf_pids[@]}")
  fi
  t0=$(date +%s.%N)
  local host0 writes0
  host0=$(cpu_counters)
  writes0=$(sim_writes "$d/sim")
  if [ -n "${SIM_CTL_DURING:-}" ]; then  # faults that start once the load does
    (
      sleep "${SIM_CTL_AFTER_S:-1}"
      IFS=';' read -ra cmds <<<"$SIM_CTL_DURING"
      for cmd in "${cmds[@]}"; do
        [ -n "${cmd// /}" ] && "$BIN/gantry-sim" ctl --out-dir "$d/sim" $cmd >/dev/null 2>&1
      done
    ) &
  fi
  GANTRY_PID=$daemon SIM_PID=$sim "$BIN/dispatch_loadgen" "$(cat "$d/gantry.ready")" "$d/sim" "$d/data/gantry.db" "$jobs" "$CONNS" "$mode" $rate \
    >"$d/out" 2>&1 || rc=$?
  for p in "${perf_pids[@]}"; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  local wall host1
  host1=$(cpu_counters)
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  grep -v '^result' "$d/out" || true
  grep '^result' "$d/out" >"$work/$name.result" || echo "result" >"$work/$name.result"
  echo "  cpu         gantry $(cpu_s "$daemon") s, gantry-sim $(cpu_s "$sim") s in $wall s of wall time (2 cores: $(awk -v w="$wall" 'BEGIN { printf "%.1f", 2 * w }') s)"
  echo "  host        $(host_shares "$host0" "$host1") of the machine's CPU time meanwhile"
  echo "  by thread   gantry: $(cpu_by_thread "$daemon")"
  echo "              gantry-sim: $(cpu_by_thread "$sim")"
  echo "  sim writes  $(awk -v a="$writes0" -v b="$(sim_writes "$d/sim")" -v n="$jobs" 'BEGIN { printf "%.1f", (b - a) / n }') object writes per job in the simulated clusters (creates, status changes, deletes: each an event of its cluster's watch history)"
  echo "  store       gantry wrote $(written_kib_per_job "$daemon" "$jobs") KiB to files per job (its SQLite WAL, database and log)"
  echo "  switches    gantry $(switches_per_job "$daemon" "$jobs"), gantry-sim $(switches_per_job "$sim" "$jobs") context switches per job (threads still alive)"
  echo "              gantry: $(switches_by_thread "$daemon" "$jobs")"
  echo "              gantry-sim: $(switches_by_thread "$sim" "$jobs")"
  echo "  memory      peak resident: gantry $(peak_mib "$daemon") MiB, gantry-sim $(peak_mib "$sim") MiB; gantry at the end: $(rss_split "$daemon")"
  echo "  check       $("$BIN/gantry-sim" ctl --out-dir "$d/sim" check 2>&1 | head -5 | tr '\n' ' ')"
  # Without a tokensFile the daemon warns once at start; that one is expected.
  grep -E ' (warning|error|critical) ' "$d/gantry.log" | grep -v 'no tokensFile' >"$d/warnings" || true
  echo "  gantry log  $(wc -l <"$d/warnings") warning(s) or error(s)"
  head -3 "$d/warnings" | sed 's/^/    /'  # head first: sed cut off by head would fail the script (pipefail)
  [ "$rc" = 0 ] || { echo "  (dispatch_loadgen exited $rc)"; failed=1; }
  stop "$daemon"
  stop "$sim"
  pids=()
}

want() { [ -z "${SCENARIOS:-}" ] || [[ " $SCENARIOS " == *" $1 "* ]]; }
named() { [[ " ${SCENARIOS:-} " == *" $1 "* ]]; }
# The machine first: its costs set the figures below (builds from before
# the probe have none).
if [ -x "$BIN/machine_probe" ]; then "$BIN/machine_probe" "$work"; fi
# And the CPU of a bare HTTPS round trip (transport_floor): what the 18
# round trips of an AllAtOnce job cost before any work of gantry's or the
# simulator's own.
if [ -x "$BIN/transport_floor" ]; then "$BIN/transport_floor" "$CLUSTERS" 16 3 1500 18; fi
if want allatonce; then
  echo "AllAtOnce: $JOBS jobs, closed loop over $CONNS connections, $CLUSTERS clusters:"
  scenario allatonce AllAtOnce "$JOBS"
fi
if want incremental; then
  echo "Incremental (stepSize 3): $JOBS jobs, closed loop over $CONNS connections, $CLUSTERS clusters:"
  scenario incremental Incremental "$JOBS"
fi
if want paced; then
  for mode in $PACED_MODES; do
    echo "$mode paced at $RATE jobs/s for $PACED_SECONDS s (latency from the scheduled post time):"
    scenario "paced-$mode" "$mode" "$((RATE * PACED_SECONDS))" "$RATE"
  done
fi

if named rest; then
  echo "A backlog at rest: ${REST_JOBS:-2000} AllAtOnce jobs of 96 CPUs for an hour, $CLUSTERS clusters of 384, then ${REST_SECONDS:-60} s of rest:"
  REST_SECONDS=${REST_SECONDS:-60} scenario rest AllAtOnce "${REST_JOBS:-2000}"
fi

echo "targets:"
for name in allatonce incremental; do
  [ -s "$work/$name.result" ] || continue
  r=$(field dispatched_per_s <"$work/$name.result")
  s=$(field steady_per_s <"$work/$name.result")
  verdict=$(awk -v r="${r:-0}" -v t=$TARGET_DISPATCH_PER_S 'BEGIN { print (r >= t ? "met" : "MISSED") }')
  echo "  >= $TARGET_DISPATCH_PER_S jobs/s dispatched, $name: ${r:-?} jobs/s (${s:-?} steady): $verdict"
done
for mode in $PACED_MODES; do
  [ -s "$work/paced-$mode.result" ] || continue
  p99=$(field lease_p99_ms <"$work/paced-$mode.result")
  verdict=$(awk -v p="${p99:-1e9}" -v t=$TARGET_P99_MS 'BEGIN { print (p < t ? "met" : "MISSED") }')
  echo "  p99 admission latency < $TARGET_P99_MS ms at $RATE jobs/s ($mode): ${p99:-?} ms (post -> LeaseTaken): $verdict"
done
