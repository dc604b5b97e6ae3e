#!/usr/bin/env bash
# Instructions the capture agent executes per allocation, counted by
# valgrind (callgrind), which a loaded machine does not disturb: runs
# agent/testapps/alloc_heavy.cs on .NET 8 at two round counts in each mode
# and prints the instructions per allocation of the difference (start-up
# and JIT compilation cancel out), and that above the floor
# (CLRPROF_FLOOR=size: the agent loaded, ObjectAllocated asks the size and
# returns). All threads count (the writer and flush threads too).
#
#   agent/bench/instructions.sh [ROUNDS_LOW] [ROUNDS_HIGH]   (defaults 100 and 400)
#   AGENT=/path/libclrprof_agent.so agent/bench/instructions.sh   (another build)
#
# Needs scripts/setup-dotnet.sh, valgrind and a release build. Takes a few
# minutes (valgrind runs the program about 50x slower).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
low="${1:-100}"
high="${2:-400}"
eval "$(bash "$root/scripts/setup-dotnet.sh")"
target="${CARGO_TARGET_DIR:-$root/target}"
agent="${AGENT:-$target/release/libclrprof_agent.so}"
[ -f "$agent" ] || { echo "build the agent first: cargo build --release" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mcs -out:"$work/alloc_heavy.dll" "$root/agent/testapps/alloc_heavy.cs" >/dev/null
printf '{"runtimeOptions":{"framework":{"name":"Microsoft.NETCore.App","version":"8.0.0"}}}' > "$work/alloc_heavy.runtimeconfig.json"

# Instructions of one run (the largest callgrind output: the dotnet
# process, not the env wrapper); sets ir and allocs.
count() { # rounds VAR=value...
    local rounds="$1"; shift
    rm -rf "$work/cg" "$work/out.log"; mkdir "$work/cg"
    # valgrind cannot reserve the GC's default 256 GB of address space.
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$work/cg/out.%p" \
        env DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 DOTNET_GCHeapHardLimit=0x20000000 \
        CORECLR_ENABLE_PROFILING=1 "CORECLR_PROFILER={BC620A3A-B286-4C9C-8138-256EE44F802D}" \
        "CORECLR_PROFILER_PATH=$agent" "CLRPROF_OUTPUT=$work/out.log" CLRPROF_FORCE=1 "$@" \
        "$DOTNET8" "$work/alloc_heavy.dll" "$rounds" >/dev/null 2>&1
    ir=$(grep -h -m1 '^summary:' $(ls -S "$work"/cg/out.* | head -1) | awk '{print $2}')
    allocs=0
    if [ -f "$work/out.log" ]; then allocs=$(grep -c '^!' "$work/out.log" || true); fi
}

# Instructions per allocation of the difference between the two round
# counts; sets per. The allocations are counted in the first mode run
# (no stacks), whose log has every `!` line.
n_low=0 n_high=0
per_alloc() { # VAR=value...
    count "$low" "$@"; local ir_low=$ir
    if [ "$allocs" -gt 0 ]; then n_low=$allocs; fi
    count "$high" "$@"; local ir_high=$ir
    if [ "$allocs" -gt 0 ]; then n_high=$allocs; fi
    per=$(awk -v a="$ir_low" -v b="$ir_high" -v n="$((n_high - n_low))" 'BEGIN { printf "%d", (b - a) / n }')
}

echo "alloc_heavy $low -> $high rounds on .NET 8, agent $agent; load average $(cut -d' ' -f1-3 /proc/loadavg)"
per_alloc CLRPROF_STACKS=none; none=$per
per_alloc CLRPROF_STACKS=none CLRPROF_FLOOR=size; floor=$per
per_alloc CLRPROF_STACKS=shadow; shadow=$per
per_alloc CLRPROF_STACKS=shadow CLRPROF_CALLS=1; calls=$per
echo "allocations: $n_low -> $n_high"
printf '%-12s %6s instructions/alloc\n' floor-size "$floor"
for m in none shadow calls; do
    printf '%-12s %6s instructions/alloc  %+6d above floor\n' "$m" "${!m}" "$(( ${!m} - floor ))"
done
