#!/usr/bin/env bash
# The benchmarks that guard the headline figures, run before a release and
# compared with the last recorded ones (benches/gate-baseline.tsv): a
# benchmark whose CPU time grew by more than 20% fails the gate.
#
#   gen      clrprof gen --preset seed -o seed.log     the generator (640 MB)
#   parse    clrprof stats seed.log                    the parser alone
#   load     clrprof footprint --json seed.log         the whole load (model)
#   trace    clrprof stats trace.nettrace (ten times)  the NetTrace reader
#   import   clrprof summary trace.nettrace            a trace loaded as a model
#
# (trace.nettrace: clrprof gen --preset medium --format nettrace
# --tick-bytes 0, a GC/AllocationTick with its stack for each of 3 M
# objects.) The model cache is off (CLRPROF_CACHE=off): every load is a
# whole load. Each benchmark runs RUNS times (default 5); the median CPU
# time (user + system, all threads, from GNU time) is compared, since on a
# shared machine it moves far less than the wall time (the median wall time
# is printed beside it). Each input is read once with `cat` first, so that
# the page cache holds it.
#
# Usage: scripts/bench-gate.sh [--record] [DIR]
#   DIR       where the generated files go (default target/bench-gate;
#             about 1 GB)
#   --record  write the figures measured as the new baseline instead of
#             comparing (after a change that is meant to cost, or on new
#             hardware; commit the file with the reason)
# Exit status: 0 within 20%, 1 when a benchmark regressed, 2 on an error.
# Needs the release tool (cargo build --release -p clrprof-cli) and GNU time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
baseline="$root/benches/gate-baseline.tsv"
record=0
if [ "${1:-}" = "--record" ]; then
    record=1
    shift
fi
target="${CARGO_TARGET_DIR:-$root/target}"
clrprof="$target/release/clrprof"
dir="${1:-$target/bench-gate}"
runs="${RUNS:-5}"
limit="${GATE_LIMIT:-1.20}"
export CLRPROF_CACHE=off
if [ ! -x /usr/bin/time ]; then
    echo "bench-gate: GNU time is needed (apt-get install time)" >&2
    exit 2
fi
if [ ! -x "$clrprof" ]; then
    echo "bench-gate: $clrprof is missing: cargo build --release -p clrprof-cli" >&2
    exit 2
fi
mkdir -p "$dir"
log="$dir/seed.log"
trace="$dir/trace.nettrace"

# One timed run of "$@": prints "CPU WALL" (seconds).
timed() {
    /usr/bin/time -o "$dir/time.txt" -f '%U %S %e' "$@" >/dev/null 2>&1
    awk '{ printf "%.3f %.3f\n", $1 + $2, $3 }' "$dir/time.txt"
}

# The median of the numbers on standard input.
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench NAME SETUP -- COMMAND...: SETUP runs before each run, untimed.
declare -A cpu wall
bench() {
    local name=$1 setup=$2
    shift 3
    local cpus=() walls=() i r
    for i in $(seq "$runs"); do
        eval "$setup"
        r=$(timed "$@")
        cpus+=("${r% *}")
        walls+=("${r#* }")
    done
    cpu[$name]=$(printf '%s\n' "${cpus[@]}" | median)
    wall[$name]=$(printf '%s\n' "${walls[@]}" | median)
    printf '%-7s CPU %6.2f s (runs: %s)  wall %6.2f s\n' "$name" "${cpu[$name]}" "${cpus[*]}" "${wall[$name]}"
}

echo "bench-gate: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'), $runs runs each, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
bench gen "rm -f '$log' '$dir/seed.truth.json'; sync" -- "$clrprof" gen --preset seed -q -o "$log"
cat "$log" >/dev/null
bench parse ":" -- "$clrprof" stats "$log"
bench load ":" -- "$clrprof" footprint --json "$log"
rm -f "$trace"
"$clrprof" gen --preset medium --format nettrace --tick-bytes 0 -q -o "$trace"
cat "$trace" >/dev/null
# The census reads every event's header of the 290 MB trace in about 0.1 s:
# ten reads per run, so that the figure stands above the clock's 10 ms.
bench trace ":" -- bash -c 'for i in 1 2 3 4 5 6 7 8 9 10; do "$0" stats "$1" >/dev/null; done' "$clrprof" "$trace"
bench import ":" -- "$clrprof" summary "$trace"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average $load_end at the end"

names="gen parse load trace import"
if [ "$record" = 1 ]; then
    {
        echo "# The figures scripts/bench-gate.sh compares against: median CPU seconds"
        echo "# (user + system) of $runs runs, the median wall time beside them."
        echo "# Recorded $(date -u '+%Y-%m-%d %H:%M UTC') at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'), load average $load_end at the end."
        printf '# name\tcpu_s\twall_s\n'
        for n in $names; do
            printf '%s\t%s\t%s\n' "$n" "${cpu[$n]}" "${wall[$n]}"
        done
    } >"$baseline"
    echo "bench-gate: recorded $baseline"
    exit 0
fi

if [ ! -f "$baseline" ]; then
    echo "bench-gate: no baseline ($baseline): run with --record first" >&2
    exit 2
fi
failed=0
for n in $names; do
    was=$(awk -v n="$n" -F'\t' '$1 == n { print $2 }' "$baseline")
    if [ -z "$was" ]; then
        echo "bench-gate: $n has no baseline figure" >&2
        failed=1
        continue
    fi
    verdict=$(awk -v now="${cpu[$n]}" -v was="$was" -v limit="$limit" 'BEGIN {
        r = now / was; printf "%s %+.0f%%", (r > limit ? "REGRESSED" : "ok"), (r - 1) * 100 }')
    printf '%-7s %6.2f s CPU against %6.2f s recorded: %s\n' "$n" "${cpu[$n]}" "$was" "$verdict"
    case $verdict in REGRESSED*) failed=1 ;; esac
done
if [ "$failed" = 1 ]; then
    echo "bench-gate: FAILED: a figure is more than $(awk -v l="$limit" 'BEGIN { printf "%.0f", (l - 1) * 100 }')% over its baseline (run again on a quieter machine before believing it; scripts/bench-gate.sh --record after a cost that is meant)" >&2
    exit 1
fi
echo "bench-gate: every figure within $(awk -v l="$limit" 'BEGIN { printf "%.0f", (l - 1) * 100 }')% of its baseline"
