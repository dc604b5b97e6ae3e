#!/usr/bin/env bash
# What a heap dump costs the program dumped, against its heap's size.
#
#   scripts/dump-cost.sh [MB...]            (default: 100 500 1000 2000)
#
# For each size, a .NET 8 program (agent/testapps/costly.cs: MB megabytes
# of heap, two fifths in small objects, the rest in large long[] arrays,
# built by 4 threads that then keep allocating a little) is started and
# dumped twice, first agent-free (`clrprof heap-dump PID`, over EventPipe),
# then through the agent (`clrprof heap-dump PID --attach`, which loads
# the agent and dumps through it). For each dump, one table row:
#
#   heap MB    the program's heap (GC.GetTotalMemory once built)
#   rss MB     the program's resident memory just before the dump
#   added MB   its peak resident memory during the dump (VmHWM, reset with
#              /proc/PID/clear_refs just before) minus that
#   pause ms   the longest gap the program's own 1 ms ticker saw
#   clrprof MB clrprof's peak resident memory (/usr/bin/time %M)
#   wall s     clrprof's wall time
#   trace MB   the dump's file
#
# Environment: CLRPROF (default target/release/clrprof; the agent is
# found beside it or through CLRPROF_AGENT), CLRPROF_DOTNET_VENV (as
# scripts/setup-dotnet.sh), DUMP_COST_WORK (default /tmp/dump-cost), and
# DUMP_COST_AGENT=0 to skip the agent's dumps. Extra `heap-dump` options
# for the agent-free dump go in DUMP_COST_ARGS (e.g. "--buffer-mb 1024").
#
# Pauses are wall-clock gaps: on a loaded machine they include time the
# program waited for a core; resident memory is the reliable figure.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
clrprof=${CLRPROF:-$repo/target/release/clrprof}
work=${DUMP_COST_WORK:-/tmp/dump-cost}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100 500 1000 2000)
venv=${CLRPROF_DOTNET_VENV:-$repo/target/dotnet-venv}
dotnet=$(ls "$venv"/lib/python3*/site-packages/dnv/net/runtime/.net/dotnet 2>/dev/null | head -1)
[ -x "$dotnet" ] || { echo "no .NET 8 host under $venv (run scripts/setup-dotnet.sh)" >&2; exit 2; }
[ -x "$clrprof" ] || { echo "no clrprof at $clrprof (cargo build --release -p clrprof-cli)" >&2; exit 2; }

mkdir -p "$work"
mcs -out:"$work/costly.dll" "$repo/agent/testapps/costly.cs" >/dev/null
printf '{"runtimeOptions":{"framework":{"name":"Microsoft.NETCore.App","version":"8.0.0"}}}' >"$work/costly.runtimeconfig.json"

kb() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }
json_num() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }

# One dump of process $1 by `clrprof $3...`, labelled $2: prints its row.
measure() {
    local pid=$1 how=$2; shift 2
    local out=$work/$how.out timing=$work/$how.time
    echo 5 >"/proc/$pid/clear_refs"    # VmHWM := VmRSS
    local rss_before; rss_before=$(kb "$pid" VmRSS)
    echo stall >&"${APP[1]}"; read -r _ <&"${APP[0]}"
    local status=ok
    /usr/bin/time -f '%M %e' -o "$timing" "$clrprof" "$@" >"$out" 2>"$work/$how.err" || status="failed($?)"
    local hwm; hwm=$(kb "$pid" VmHWM)
    echo stall >&"${APP[1]}"; local stall; read -r stall <&"${APP[0]}"
    local complete=-
    if grep -q '"complete":false' "$out"; then complete=INCOMPLETE; elif grep -q '"complete":true' "$out"; then complete=yes; fi
    local file; file=$(sed -n 's/.*"log":"\([^"]*\)".*/\1/p' "$out")
    local trace_mb=-
    [ -n "$file" ] && [ -f "$file" ] && trace_mb=$(( $(stat -c %s "$file") >> 20 ))
    read -r own wall <"$timing" || { own=0; wall=0; }
    printf '%-10s %7s %7s %8s %8s %10s %7s %8s %s %s\n' "$how" "$heap_mb" $((rss_before >> 10)) $(((hwm - rss_before) >> 10)) \
        "$(echo "$stall" | json_num stall_ms)" $((own >> 10)) "$wall" "$trace_mb" "$complete" "$status"
    [ -n "$file" ] && rm -f "$file"
}

printf '%-10s %7s %7s %8s %8s %10s %7s %8s %s\n' dump "heap MB" "rss MB" "added MB" "pause ms" "clrprof MB" "wall s" "trace MB" complete
for mb in "${sizes[@]}"; do
    coproc APP { cd "$work" && DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 exec "$dotnet" costly.dll "$mb" 4; }
    read -r ready <&"${APP[0]}"
    pid=$(echo "$ready" | json_num pid)
    heap_mb=$(( $(echo "$ready" | json_num bytes) >> 20 ))
    sleep 2
    # shellcheck disable=SC2086
    measure "$pid" agent-free heap-dump "$pid" -o "$work/free_$mb.nettrace" --json ${DUMP_COST_ARGS:-}
    if [ "${DUMP_COST_AGENT:-1}" != 0 ]; then
        measure "$pid" agent heap-dump "$pid" --attach -o "$work/agent_$mb.log" --json
    fi
    echo exit >&"${APP[1]}"
    wait "$APP_PID" 2>/dev/null || true
done
