#!/usr/bin/env bash
# Overhead of the capture agent on an allocation-heavy program
# (agent/testapps/alloc_heavy.cs): the program alone, the floor (the agent
# loaded with allocation callbacks on but doing nothing: CLRPROF_FLOOR=return
# only returns from ObjectAllocated, CLRPROF_FLOOR=size also asks the
# object's size), then the agent in each mode. Prints one line per mode:
# the wall time and the CPU time (user + system) of the best of RUNS, each
# with its ratio to the program alone, and the agent's own cost per
# allocation above the floor (CLRPROF_FLOOR=size), from CPU time, which a
# loaded machine disturbs less than wall time. Each mode also runs one
# round (start-up: the runtime, JIT compilation) for the CPU time of its
# start-up, and the cost per allocation is given again without it: the
# extra CPU time of RUNS rounds over one round, above the floor's, per
# allocation (with hooks the runtime compiles every method optimized at
# first call, a fixed start-up cost the first figure spreads over the
# allocations). The load average is printed with the figures: on a shared
# machine every timing depends on it.
#
#   agent/bench/overhead.sh [ROUNDS] [RUNS]      (defaults 1000 and 3)
#   SNAPSHOT=1 agent/bench/overhead.sh ...       (also snapshot stacks: slow)
#
# Needs scripts/setup-dotnet.sh and a release build (cargo build --release).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rounds="${1:-1000}"
runs="${2:-3}"
eval "$(bash "$root/scripts/setup-dotnet.sh")"
target="${CARGO_TARGET_DIR:-$root/target}"
agent="$target/release/libclrprof_agent.so"
[ -f "$agent" ] || { echo "build the agent first: cargo build --release" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mcs -out:"$work/alloc_heavy.dll" "$root/agent/testapps/alloc_heavy.cs" >/dev/null
export DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1

# One timed run: sets wall_ms and cpu_ms.
timed() {
    local TIMEFORMAT='%R %U %S' t
    t=$( { time env "$@" > "$work/stdout" 2>/dev/null; } 2>&1 )
    read -r r u s <<< "$t"
    wall_ms=$(awk -v r="$r" 'BEGIN { printf "%d", r * 1000 }')
    cpu_ms=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%d", (u + s) * 1000 }')
}

run_mode() { # runtime host version mode [VAR=value...]
    local rt="$1" host="$2" version="$3" mode="$4"; shift 4
    printf '{"runtimeOptions":{"framework":{"name":"Microsoft.NETCore.App","version":"%s"}}}' "$version" \
        > "$work/alloc_heavy.runtimeconfig.json"
    local best="" best_cpu="" start_cpu=""
    # Start-up alone (one round: a few thousand allocations): the fixed
    # cost, JIT compilation included.
    for _ in $(seq "$runs"); do
        rm -f "$work/out.log"
        timed "$@" "$host" "$work/alloc_heavy.dll" 1
        if [ -z "$start_cpu" ] || [ "$cpu_ms" -lt "$start_cpu" ]; then start_cpu=$cpu_ms; fi
    done
    for _ in $(seq "$runs"); do
        rm -f "$work/out.log"
        timed "$@" "$host" "$work/alloc_heavy.dll" "$rounds"
        if [ -z "$best" ] || [ "$wall_ms" -lt "$best" ]; then best=$wall_ms; fi
        if [ -z "$best_cpu" ] || [ "$cpu_ms" -lt "$best_cpu" ]; then best_cpu=$cpu_ms; fi
    done
    local size=0
    if [ -f "$work/out.log" ]; then
        size=$(stat -c %s "$work/out.log")
        if [ "$mode" = no-stacks ]; then allocs=$(grep -c '^!' "$work/out.log" || true); fi
    fi
    [ -n "$base" ] || base=$best
    [ -n "$base_cpu" ] || base_cpu=$best_cpu
    if [ "$mode" = floor-size ]; then floor_cpu=$best_cpu; floor_start=$start_cpu; fi
    local above="-" marginal="-"
    if [ -n "$floor_cpu" ] && [ "$allocs" -gt 0 ] && [ "$mode" != floor-size ]; then
        above=$(awk -v c="$best_cpu" -v f="$floor_cpu" -v n="$allocs" 'BEGIN { printf "%+.0f ns", (c - f) * 1e6 / n }')
        marginal=$(awk -v c="$best_cpu" -v cs="$start_cpu" -v f="$floor_cpu" -v fs="$floor_start" -v n="$allocs" \
            'BEGIN { printf "%+.0f ns", ((c - cs) - (f - fs)) * 1e6 / n }')
    fi
    printf '%-4s %-11s %6d ms %5sx  cpu %6d ms %5sx  start %4d ms  above floor %9s/alloc, %9s without start-up  %5d MB log  gc %s\n' \
        "$rt" "$mode" "$best" \
        "$(awk -v a="$best" -v b="$base" 'BEGIN { printf "%.1f", a / b }')" "$best_cpu" \
        "$(awk -v a="$best_cpu" -v b="$base_cpu" 'BEGIN { printf "%.1f", a / b }')" "$start_cpu" "$above" "$marginal" "$((size / 1000000))" \
        "$(sed -n 's/.*"gc":\(\[[0-9,]*\]\).*/\1/p' "$work/stdout")"
}

prof=(CORECLR_ENABLE_PROFILING=1 "CORECLR_PROFILER={BC620A3A-B286-4C9C-8138-256EE44F802D}"
      "CORECLR_PROFILER_PATH=$agent" "CLRPROF_OUTPUT=$work/out.log" CLRPROF_FORCE=1)
echo "$rounds rounds, best of $runs; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
for rt in 3.1 8; do
    if [ "$rt" = 3.1 ]; then host="$DOTNET31"; version=3.1.0; else host="$DOTNET8"; version=8.0.0; fi
    base="" base_cpu="" floor_cpu="" floor_start="" allocs=0
    # The allocation count comes from the no-stacks log: run it first.
    run_mode "$rt" "$host" "$version" alone CLRPROF_UNUSED=1
    run_mode "$rt" "$host" "$version" no-stacks "${prof[@]}" CLRPROF_STACKS=none
    run_mode "$rt" "$host" "$version" floor-return "${prof[@]}" CLRPROF_STACKS=none CLRPROF_FLOOR=return
    run_mode "$rt" "$host" "$version" floor-size "${prof[@]}" CLRPROF_STACKS=none CLRPROF_FLOOR=size
    run_mode "$rt" "$host" "$version" no-stacks "${prof[@]}" CLRPROF_STACKS=none
    run_mode "$rt" "$host" "$version" shadow "${prof[@]}" CLRPROF_STACKS=shadow
    run_mode "$rt" "$host" "$version" calls "${prof[@]}" CLRPROF_STACKS=shadow CLRPROF_CALLS=1
    if [ "${SNAPSHOT:-0}" = 1 ]; then
        run_mode "$rt" "$host" "$version" snapshot "${prof[@]}" CLRPROF_STACKS=snapshot
    fi
    echo "   allocations: $allocs; load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
done
