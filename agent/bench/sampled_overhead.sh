#!/usr/bin/env bash
# CPU time of the allocation-heavy program (agent/testapps/alloc_heavy.cs)
# on .NET 8: alone, under `clrprof record --sampled` (EventPipe: sampled
# allocations with stacks, GCs, survivors; the program started suspended
# and resumed under the session), and under the agent (`clrprof record`,
# every allocation, shadow stacks). CPU time is user + system of the whole
# run, clrprof included (bash's `time` counts waited-for children): the
# cost of capturing, not only the program's share of it. Best of RUNS
# each; the load average is printed with the figures.
#
#   agent/bench/sampled_overhead.sh [ROUNDS] [RUNS]      (defaults 1000 and 5)
#
# Needs scripts/setup-dotnet.sh and a release build (cargo build --release).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rounds="${1:-1000}"
runs="${2:-5}"
eval "$(bash "$root/scripts/setup-dotnet.sh")"
target="${CARGO_TARGET_DIR:-$root/target}"
clrprof="$target/release/clrprof"
[ -x "$clrprof" ] || { echo "build clrprof first: cargo build --release" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mcs -out:"$work/alloc_heavy.dll" "$root/agent/testapps/alloc_heavy.cs" >/dev/null
printf '{"runtimeOptions":{"framework":{"name":"Microsoft.NETCore.App","version":"8.0.0"}}}' > "$work/alloc_heavy.runtimeconfig.json"
export DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 CLRPROF_AGENT="$target/release/libclrprof_agent.so"

best() { # label command...
    local label="$1"; shift
    local best_cpu="" best_wall="" TIMEFORMAT='%R %U %S' t r u s
    for _ in $(seq "$runs"); do
        rm -f "$work"/out.*
        t=$( { time "$@" > /dev/null 2>&1; } 2>&1 )
        read -r r u s <<< "$t"
        local cpu wall
        cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%d", (u + s) * 1000 }')
        wall=$(awk -v r="$r" 'BEGIN { printf "%d", r * 1000 }')
        if [ -z "$best_cpu" ] || [ "$cpu" -lt "$best_cpu" ]; then best_cpu=$cpu; fi
        if [ -z "$best_wall" ] || [ "$wall" -lt "$best_wall" ]; then best_wall=$wall; fi
    done
    echo "$label $best_cpu $best_wall"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds, best of $runs"
alone=$(best alone "$DOTNET8" "$work/alloc_heavy.dll" "$rounds")
sampled=$(best sampled "$clrprof" record --sampled -q -o "$work/out.nettrace" -- "$DOTNET8" "$work/alloc_heavy.dll" "$rounds")
agent=$(best agent "$clrprof" record -q -o "$work/out.log" -- "$DOTNET8" "$work/alloc_heavy.dll" "$rounds")
base_cpu=$(echo "$alone" | cut -d' ' -f2)
for line in "$alone" "$sampled" "$agent"; do
    read -r label cpu wall <<< "$line"
    awk -v l="$label" -v c="$cpu" -v w="$wall" -v b="$base_cpu" \
        'BEGIN { printf "%-8s CPU %6d ms (%+.1f%%)  wall %6d ms\n", l, c, (c - b) * 100 / b, w }'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
