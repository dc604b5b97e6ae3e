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

run_mode() { # runtime-name host version mode-name [env...]
    local rt="$1" host="$2" version="$3" mode="$4"; shift 4
    printf '{"runtimeOptions":{"framework":{"name":"Microsoft.NETCore.App","version":"%s"}}}' "$version" \
        > "$work/alloc_heavy.runtimeconfig.json"
    local best=""
    for _ in $(seq "$runs"); do
        rm -f "$work/out.log"
        local t0 t1 ms
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
    echo "$rt $mode $best"
    printf '%-6s %-10s %7d ms  %5sx  %9d allocations  %6d MB log\n' "$rt" "$mode" "$best" \
        "$(awk -v a="$best" -v b="${base:-$best}" 'BEGIN { printf "%.1f", a / b }')" "$allocs" "$((size / 1000000))" >&2
}

prof=(CORECLR_ENABLE_PROFILING=1 "CORECLR_PROFILER={BC620A3A-B286-4C9C-8138-256EE44F802D}"
      "CORECLR_PROFILER_PATH=$agent" "CLRPROF_OUTPUT=$work/out.log")
for rt in 3.1 8; do
    if [ "$rt" = 3.1 ]; then host="$DOTNET31"; version=3.1.0; else host="$DOTNET8"; version=8.0.0; fi
    base=""
    base=$(run_mode "$rt" "$host" "$version" alone X=1 2>/dev/null | awk '{print $3}')
    run_mode "$rt" "$host" "$version" alone X=1 >/dev/null
    run_mode "$rt" "$host" "$version" no-stacks "${prof[@]}" CLRPROF_STACKS=none >/dev/null
    run_mode "$rt" "$host" "$version" shadow "${prof[@]}" CLRPROF_STACKS=shadow >/dev/null
    run_mode "$rt" "$host" "$version" snapshot "${prof[@]}" CLRPROF_STACKS=snapshot >/dev/null
    run_mode "$rt" "$host" "$version" calls "${prof[@]}" CLRPROF_STACKS=shadow CLRPROF_CALLS=1 >/dev/null
done
