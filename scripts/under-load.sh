#!/usr/bin/env bash
# Runs a command on a machine kept busy: at least four runnable processes
# per core (LOAD_PER_CORE) for the command's whole run. Busy loops at normal
# priority fill what the rest of the machine leaves: every second the
# script reads the runnable count from /proc/stat and starts or stops loops
# so that the other runnable processes (the command's, builds, anything)
# plus its loops are at least the target, taking the least of the others
# over the last three seconds so that a dip is always filled. On an idle
# machine that is LOAD_PER_CORE loops per core.
#
# Every 10 s the load average, the runnable count and the loops running
# are written to LOAD_LOG (default target/under-load.log), with the
# command's exit status at the end, so a run can show the load it had.
#
#   bash scripts/under-load.sh env CI=true cargo test --release --no-fail-fast
#
# This is how the test suite is checked to hold on a busy machine (the
# testing chapter's "Under load").
set -euo pipefail
per_core="${LOAD_PER_CORE:-4}"
cores="$(nproc)"
target=$((per_core * cores))
log="${LOAD_LOG:-target/under-load.log}"
mkdir -p "$(dirname "$log")"

filler() {
    local loops=() seen=() tick=0 running others want least
    trap 'kill "${loops[@]}" 2>/dev/null; exit 0' TERM INT
    while :; do
        running=$(awk '/^procs_running/ {print $2}' /proc/stat)
        # The reading itself (awk) is one of the runnable ones.
        others=$((running - ${#loops[@]} - 1))
        ((others < 0)) && others=0
        seen=("${seen[@]: -2}" "$others")
        least=$(printf '%s\n' "${seen[@]}" | sort -n | head -1)
        want=$((target - least))
        ((want < 0)) && want=0
        while ((${#loops[@]} < want)); do
            sh -c 'while :; do :; done' &
            loops+=("$!")
        done
        while ((${#loops[@]} > want)); do
            kill "${loops[-1]}" 2>/dev/null || true
            unset 'loops[-1]'
        done
        if ((tick % 10 == 0)); then
            printf '%s load %s runnable %s loops %s\n' "$(date -u +%H:%M:%S)" \
                "$(cut -d' ' -f1-3 /proc/loadavg)" "$running" "${#loops[@]}" >>"$log"
        fi
        tick=$((tick + 1))
        sleep 1
    done
}

filler &
filler_pid=$!
trap 'kill "$filler_pid" 2>/dev/null || true; wait "$filler_pid" 2>/dev/null || true' EXIT
echo "under-load: at least $target runnable processes on $cores cores; load in $log" >&2
status=0
"$@" || status=$?
echo "$(date -u +%H:%M:%S) exit $status" >>"$log"
exit "$status"
