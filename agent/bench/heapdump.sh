#!/usr/bin/env bash
# Heap dump cost on a heap of many small live objects
# (agent/bench/bigheap.cs): for each size, the program is started bare and
# dumped with `clrprof heap-dump PID -o FILE` (the agent attaches, then a
# second dump reuses it), and started under the agent with allocation
# logging off (CLRPROF_ALLOCATIONS=0) and dumped into its log. Prints, per
# runtime, size and case: the dump's own time (request to end of GC, as the
# agent reports it), the wall time of the command, the dump's objects and
# log bytes, bytes per object, and the longest pause a spinning thread of
# the program saw.
#
#   agent/bench/heapdump.sh [OBJECTS...]     (default: 1000000 10000000)
#
# Needs scripts/setup-dotnet.sh and a release build (cargo build --release).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 10000000)
eval "$(bash "$root/scripts/setup-dotnet.sh")"
target="${CARGO_TARGET_DIR:-$root/target}"
agent="$target/release/libclrprof_agent.so"
clrprof="$target/release/clrprof"
[ -f "$agent" ] && [ -x "$clrprof" ] || { echo "build first: cargo build --release" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mcs -out:"$work/bigheap.dll" "$root/agent/bench/bigheap.cs" >/dev/null
export DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 CLRPROF_AGENT="$agent"

now_ms() { date +%s%3N; }

# dump_once CASE PID PIPE-OUT FILE: one heap-dump, one result line
dump_once() {
    local case="$1" pid="$2" out="$3" file="$4" rt="$5" n="$6" t0 t1 json
    t0=$(now_ms)
    if [ -n "$file" ]; then
        json=$("$clrprof" heap-dump "$pid" -o "$file" --json)
    else
        json=$("$clrprof" heap-dump "$pid" --json)
    fi
    t1=$(now_ms)
    echo pause >&"$out"
    local pause log
    read -r pause <&"${prog[0]}"
    log=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["dump"]["log"])' "$json")
    python3 - "$json" "$pause" "$case" "$rt" "$n" "$((t1 - t0))" "$log" <<'PY'
import json, os, sys
d = json.loads(sys.argv[1])["dump"]; pause = json.loads(sys.argv[2])["max_pause_ms"]
case, rt, n, wall, log = sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
size = os.path.getsize(log)
print(f"{rt:<5} {n:>10,} {case:<22} dump {d['millis']:>6} ms  wall {wall:>6} ms  objects {d['objects']:>11,}  "
      f"log {size/1e6:>8.1f} MB  {size/max(d['objects'],1):>5.1f} B/object  pause {pause:>7} ms")
PY
}

run() { # runtime host version objects
    local rt="$1" host="$2" version="$3" n="$4"
    printf '{"runtimeOptions":{"framework":{"name":"Microsoft.NETCore.App","version":"%s"}}}' "$version" \
        > "$work/bigheap.runtimeconfig.json"
    for mode in bare agent; do
        rm -f "$work"/*.log
        if [ "$mode" = bare ]; then
            coproc prog { cd "$work" && exec "$host" bigheap.dll "$n"; }
        else
            coproc prog { cd "$work" && CORECLR_ENABLE_PROFILING=1 CORECLR_PROFILER='{BC620A3A-B286-4C9C-8138-256EE44F802D}' \
                CORECLR_PROFILER_PATH="$agent" CLRPROF_OUTPUT="$work/agent.log" CLRPROF_ALLOCATIONS=0 CLRPROF_STACKS=none \
                exec "$host" bigheap.dll "$n"; }
        fi
        local ready pid
        read -r ready <&"${prog[0]}"
        pid=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["pid"])' "$ready")
        if [ "$mode" = bare ]; then
            dump_once "attach + dump" "$pid" "${prog[1]}" "$work/a.log" "$rt" "$n"
            dump_once "dump (agent attached)" "$pid" "${prog[1]}" "$work/b.log" "$rt" "$n"
        else
            # The log holds the start-up records too: measure a file of its own.
            dump_once "dump (agent at start)" "$pid" "${prog[1]}" "$work/c.log" "$rt" "$n"
        fi
        echo exit >&"${prog[1]}"
        wait "$prog_PID" 2>/dev/null || true
    done
}

for n in "${sizes[@]}"; do
    run "3.1" "$DOTNET31" 3.1.0 "$n"
    run "8.0" "$DOTNET8" 8.0.0 "$n"
done
