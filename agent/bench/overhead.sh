#!/usr/bin/env bash
# Overhead of the capture agent on an allocation-heavy program
# (agent/testapps/alloc_heavy.cs): the program alone, then under the agent in
# each mode. Prints one line per mode with the wall time (best of RUNS),
# the ratio to the program alone, the allocations and the log size.
#
#   agent/bench/overhead.sh [ROUNDS] [RUNS]      (defaults 1000 and 3)
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

run_mode() { # runtime host version mode [VAR=value...]
    local rt="$1" host="$2" version="$3" mode="$4"; shift 4
    printf '{"runtimeOptions":{"framework":{"name":"Microsoft.NETCore.App","version":"%s"}}}' "$version" \
        > "$work/alloc_heavy.runtimeconfig.json"
    best=""
    local t0 t1 ms
    for _ in $(seq "$runs"); do
        rm -f "$work/out.log"
        t0=$(date +%s%N)
        env "$@" "$host" "$work/alloc_heavy.dll" "$rounds" > "$work/stdout"
        t1=$(date +%s%N)
        ms=$(( (t1 - t0) / 1000000 ))
        if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
    done
    local allocs=0 size=0
    if [ -f "$work/out.log" ]; then
        allocs=$(grep -c '^!' "$work/out.log" || true)
        size=$(stat -c %s "$work/out.log")
    fi
    [ -n "$base" ] || base=$best
    printf '%-4s %-10s %7d ms  %5sx  %10d allocations  %6d MB log  gc %s\n' "$rt" "$mode" "$best" \
        "$(awk -v a="$best" -v b="$base" 'BEGIN { printf "%.1f", a / b }')" "$allocs" "$((size / 1000000))" \
        "$(sed -n 's/.*"gc":\(\[[0-9,]*\]\).*/\1/p' "$work/stdout")"
}

prof=(CORECLR_ENABLE_PROFILING=1 "CORECLR_PROFILER={BC620A3A-B286-4C9C-8138-256EE44F802D}"
      "CORECLR_PROFILER_PATH=$agent" "CLRPROF_OUTPUT=$work/out.log")
echo "runtime mode  wall time (best of $runs)  ratio to the program alone  ($rounds rounds)"
for rt in 3.1 8; do
    if [ "$rt" = 3.1 ]; then host="$DOTNET31"; version=3.1.0; else host="$DOTNET8"; version=8.0.0; fi
    base=""
    run_mode "$rt" "$host" "$version" alone CLRPROF_UNUSED=1
    run_mode "$rt" "$host" "$version" no-stacks "${prof[@]}" CLRPROF_STACKS=none
    run_mode "$rt" "$host" "$version" shadow "${prof[@]}" CLRPROF_STACKS=shadow
    run_mode "$rt" "$host" "$version" snapshot "${prof[@]}" CLRPROF_STACKS=snapshot
    run_mode "$rt" "$host" "$version" calls "${prof[@]}" CLRPROF_STACKS=shadow CLRPROF_CALLS=1
done
