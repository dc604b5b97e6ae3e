#!/usr/bin/env bash
# Load on one collector: AGENTS .NET programs (agent/testapps/alloc_heavy.cs,
# .NET 8, shadow stacks: allocation at full rate) stream into one
# `clrprof collect` at once. Prints the collector's CPU time and peak memory
# per session, the bytes per second it stored, and checks that nothing was
# lost: every session ended cleanly (the agent had every byte acknowledged),
# no spool was written, the record's byte count is the file's, and every
# stored log reads without a warning. Then the agent's own
# overhead: one program alone, writing a file, and streaming, RUNS times
# each, interleaved (best and median).
#
#   crates/collect/bench/load.sh [AGENTS] [ROUNDS] [RUNS]   (defaults 32, 200, 5)
#
# Needs scripts/setup-dotnet.sh and a release build (cargo build --release).
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
agents="${1:-32}"
rounds="${2:-200}"
runs="${3:-5}"
eval "$(bash "$root/scripts/setup-dotnet.sh")"
target="${CARGO_TARGET_DIR:-$root/target}"
agent="$target/release/libclrprof_agent.so"
clrprof="$target/release/clrprof"
[ -f "$agent" ] && [ -x "$clrprof" ] || { echo "build first: cargo build --release" >&2; exit 1; }
(cd "$root" && cargo build --release -q -p clrprof-collect --example flood)
work="$(mktemp -d)"
collector_pid=""
cleanup() { [ -n "$collector_pid" ] && kill "$collector_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mcs -out:"$work/alloc_heavy.dll" "$root/agent/testapps/alloc_heavy.cs" >/dev/null
printf '{"runtimeOptions":{"framework":{"name":"Microsoft.NETCore.App","version":"8.0.0"}}}' > "$work/alloc_heavy.runtimeconfig.json"
export DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1
prof=(CORECLR_ENABLE_PROFILING=1 "CORECLR_PROFILER={BC620A3A-B286-4C9C-8138-256EE44F802D}"
      "CORECLR_PROFILER_PATH=$agent" CLRPROF_STACKS=shadow)

ticks() { # utime+stime of a process, in clock ticks
    awk '{ print $14 + $15 }' "/proc/$1/stat"
}

"$clrprof" collect --dir "$work/sessions" > "$work/vars" 2> "$work/collector.err" &
collector_pid=$!
for _ in $(seq 100); do [ -s "$work/vars" ] && [ "$(wc -l < "$work/vars")" -ge 2 ] && break; sleep 0.1; done
# shellcheck disable=SC1091
. "$work/vars"
stream=(CLRPROF_TARGET="$CLRPROF_TARGET" CLRPROF_TOKEN="$CLRPROF_TOKEN")
hz=$(getconf CLK_TCK)

echo "== $agents agents streaming alloc_heavy ($rounds rounds, .NET 8, shadow stacks) into one collector"
t0_cpu=$(ticks "$collector_pid")
t0=$(date +%s%N)
pids=()
for i in $(seq "$agents"); do
    env "${prof[@]}" "${stream[@]}" CLRPROF_SPOOL="$work/spool_$i.log" CLRPROF_STATUS="$work/status_$i" \
        "$DOTNET8" "$work/alloc_heavy.dll" "$rounds" > "$work/out_$i" 2> "$work/err_$i" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
t1=$(date +%s%N)
# Every session's record says ended (or the check below fails).
for _ in $(seq 200); do
    live=$("$clrprof" sessions --json --dir "$work/sessions" | grep -c '"state": "live"' || true)
    [ "$live" = 0 ] && break; sleep 0.1
done
t1_cpu=$(ticks "$collector_pid")
peak_kb=$(awk '/VmHWM/ { print $2 }' "/proc/$collector_pid/status")
wall_ms=$(( (t1 - t0) / 1000000 ))
"$clrprof" sessions --json --dir "$work/sessions" > "$work/sessions.json"
python3 - "$work" "$agents" "$wall_ms" "$((t1_cpu - t0_cpu))" "$hz" "$peak_kb" "$clrprof" <<'PY'
import json, os, subprocess, sys
work, agents, wall_ms, cpu_ticks, hz, peak_kb, clrprof = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
sessions = json.load(open(os.path.join(work, "sessions.json")))
problems = []
if len(sessions) != agents:
    problems.append(f"{len(sessions)} sessions for {agents} agents")
total = 0
for s in sessions:
    path = os.path.join(work, "sessions", s["log"])
    size = os.path.getsize(path)
    total += size
    if s["state"] != "ended":
        problems.append(f"{s['session']}: {s['state']} {s.get('reason')}")
    if s["bytes"] != size:
        problems.append(f"{s['session']}: record says {s['bytes']} bytes, file has {size}")
    stats = json.loads(subprocess.run([clrprof, "stats", "--json", path], capture_output=True, check=True).stdout)
    if stats["warnings"]["total"] != 0:
        problems.append(f"{s['session']}: {stats['warnings']['total']} warnings")
spools = [f for f in os.listdir(work) if f.startswith("spool_")]
if spools:
    problems.append(f"spool files written: {spools}")
cpu_s = cpu_ticks / hz
wall_s = wall_ms / 1000
print(f"agents {agents}, wall {wall_s:.1f} s, stored {total / 1e6:.1f} MB in {len(sessions)} sessions")
print(f"collector: {total / 1e6 / wall_s:.1f} MB/s stored, CPU {cpu_s:.2f} s ({100 * cpu_s / wall_s:.1f}% of one core; "
      f"{1000 * cpu_s / agents:.0f} ms per session, {1e9 * cpu_s / max(total, 1):.2f} ns per byte), "
      f"peak RSS {peak_kb / 1024:.1f} MB ({peak_kb / 1024 / agents:.2f} MB per session)")
print("lost bytes: 0 (every session ended with every byte acknowledged, no spool, no warning)" if not problems
      else "PROBLEMS:\n  " + "\n  ".join(problems))
if problems:
    print(open(os.path.join(work, "collector.err")).read()[-3000:])
sys.exit(1 if problems else 0)
PY

echo "== capacity: $agents fake agents (crates/collect/examples/flood.rs) each sending ${FLOOD_MB:-64} MB as fast as the collector takes it"
rm -rf "$work/sessions"/flood*
f0_cpu=$(ticks "$collector_pid")
"$target/release/examples/flood" "$CLRPROF_TARGET" "$work/sessions/collector.token" "$agents" "${FLOOD_MB:-64}"
f1_cpu=$(ticks "$collector_pid")
echo "collector CPU $(awk -v t=$((f1_cpu - f0_cpu)) -v hz="$hz" 'BEGIN { printf "%.2f", t / hz }') s, peak RSS $(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$collector_pid/status") MB"
rm -f "$work/sessions"/flood*

echo "== agent overhead: one alloc_heavy ($rounds rounds, .NET 8, shadow stacks), $runs interleaved runs each"
declare -A times
one() { # label VAR=value...
    local label="$1"; shift
    local t0 t1
    rm -f "$work/file.log"
    t0=$(date +%s%N)
    env "$@" "$DOTNET8" "$work/alloc_heavy.dll" "$rounds" > /dev/null
    t1=$(date +%s%N)
    times[$label]+="$(( (t1 - t0) / 1000000 )) "
}
for r in $(seq "$runs"); do
    one alone CLRPROF_UNUSED=1
    one file "${prof[@]}" CLRPROF_OUTPUT="$work/file.log"
    one stream "${prof[@]}" "${stream[@]}" CLRPROF_SPOOL="$work/spool_one_$r.log"
done
for label in alone file stream; do
    # shellcheck disable=SC2086
    printf '%s\n' ${times[$label]} | sort -n | awk -v l="$label" '
        { v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
        printf "%-7s best %6d ms  median %6d ms\n", l, v[1], m }'
done
if ls "$work"/spool_one_* >/dev/null 2>&1; then
    echo "PROBLEM: a streaming run wrote a spool; the collector said:" >&2
    grep -v "from 127.0.0.1" "$work/collector.err" | grep -v " ended (" >&2 || true
    exit 1
fi
