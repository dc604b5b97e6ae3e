#!/usr/bin/env bash
# Runs a command while the machine is kept busy: four busy processes per
# core (or LOAD_PER_CORE), at normal priority, for the command's whole run.
# The load average is written every 10 s to LOAD_LOG (default
# target/under-load.log) with the command's exit status at the end, so a
# run can show the load it had.
#
#   bash scripts/under-load.sh env CI=true cargo test --release --no-fail-fast
#
# This is how the test suite is checked to hold on a busy machine (the
# testing chapter's "Under load").
set -euo pipefail
per_core="${LOAD_PER_CORE:-4}"
cores="$(nproc)"
busy=$((per_core * cores))
log="${LOAD_LOG:-target/under-load.log}"
mkdir -p "$(dirname "$log")"
pids=()
stop() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap stop EXIT
for _ in $(seq "$busy"); do
    sh -c 'while :; do :; done' &
    pids+=("$!")
done
(
    while :; do
        printf '%s %s\n' "$(date -u +%H:%M:%S)" "$(cut -d' ' -f1-4 /proc/loadavg)"
        sleep 10
    done
) >>"$log" &
pids+=("$!")
echo "under-load: $busy busy processes on $cores cores; load average in $log" >&2
status=0
"$@" || status=$?
echo "$(date -u +%H:%M:%S) exit $status" >>"$log"
exit "$status"
