#!/usr/bin/env bash
# Whole-file read speed and peak memory: a NetTrace of at least 1 GiB
# against a CLRProfiler log of about the same size, both written by the
# generator from the same simulated program (the `medium` preset's shape,
# more objects).
#
#   trace: clrprof gen --preset medium --objects N --format nettrace --tick-bytes 0
#          (a GC/AllocationTick with its stack for every object, GC and
#          method-load events; N/4 and N/2 objects for the length series)
#   log:   clrprof gen --preset medium --objects M
#
# Readers (each run 3 times, the fastest kept; GNU time gives wall, CPU
# (user + system, all threads) and peak RSS):
#   nettrace_read TRACE            every event (headers, metadata, stacks,
#                                  sequence points) and the fields of every
#                                  AllocationTick decoded; pages already read
#                                  handed back to the kernel (RSS = the reader)
#   nettrace_read TRACE --no-fields         the events without field decoding
#   nettrace_read TRACE --keep-pages        the file stays mapped, as the log's
#   count_records LOG              the log parser alone, one thread: every
#                                  record parsed into its typed form
#   clrprof stats LOG              record counts, definitions and warnings
#                                  (the parser on line-aligned chunks, in
#                                  parallel; no heap simulation)
#
# Usage: scripts/bench-nettrace.sh [DIR]   (DIR holds the generated files;
# default target/nettrace-bench; NETTRACE_OBJECTS and LOG_OBJECTS override
# the sizes). Builds the release binaries if they are missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
bin="$target/release"
dir="${1:-$target/nettrace-bench}"
objects="${NETTRACE_OBJECTS:-11500000}"
log_objects="${LOG_OBJECTS:-34000000}"
runs="${RUNS:-3}"
if [ ! -x /usr/bin/time ]; then
    echo "GNU time is needed: apt-get install time" >&2
    exit 1
fi
if [ ! -x "$bin/clrprof" ] || [ ! -x "$bin/examples/nettrace_read" ] || [ ! -x "$bin/examples/count_records" ]; then
    (cd "$root" && cargo build --release -p clrprof-cli && cargo build --release --example nettrace_read --example count_records)
fi
mkdir -p "$dir"
gen() { # OUT OBJECTS [ARGS...]
    local out="$1" n="$2"
    shift 2
    if [ ! -f "$out" ]; then
        "$bin/clrprof" gen --preset medium --objects "$n" -o "$out" "$@"
    fi
}
gen "$dir/full.nettrace" "$objects" --format nettrace --tick-bytes 0
gen "$dir/half.nettrace" $((objects / 2)) --format nettrace --tick-bytes 0
gen "$dir/quarter.nettrace" $((objects / 4)) --format nettrace --tick-bytes 0
gen "$dir/same.log" "$log_objects" -q

tfile="$(mktemp)"
trap 'rm -f "$tfile"' EXIT
printf '%-44s %14s %8s %8s %10s %10s %12s\n' reader bytes wall_s cpu_s MB/s_wall MB/s_cpu peak_rss_MB
measure() { # LABEL FILE COMMAND...
    local label="$1" file="$2"
    shift 2
    local best_wall="" best_cpu="" best_rss=""
    for _ in $(seq "$runs"); do
        /usr/bin/time -f '%e %U %S %M' -o "$tfile" "$@" >/dev/null
        read -r wall user sys rss <"$tfile"
        local cpu
        cpu=$(python3 -c "print(round($user + $sys, 2))")
        if [ -z "$best_wall" ] || python3 -c "import sys; sys.exit(0 if $wall < $best_wall else 1)"; then
            best_wall=$wall
        fi
        if [ -z "$best_cpu" ] || python3 -c "import sys; sys.exit(0 if $cpu < $best_cpu else 1)"; then
            best_cpu=$cpu
        fi
        if [ -z "$best_rss" ] || [ "$rss" -gt "$best_rss" ]; then
            best_rss=$rss
        fi
    done
    local bytes
    bytes=$(stat -c %s "$file")
    printf '%-44s %14s %8s %8s %10.0f %10.0f %12.1f\n' "$label" "$bytes" "$best_wall" "$best_cpu" \
        "$(python3 -c "print($bytes / 1e6 / max($best_wall, 1e-9))")" \
        "$(python3 -c "print($bytes / 1e6 / max($best_cpu, 1e-9))")" \
        "$(python3 -c "print($best_rss / 1024)")"
}
measure "nettrace_read full (ticks decoded)" "$dir/full.nettrace" "$bin/examples/nettrace_read" "$dir/full.nettrace"
measure "nettrace_read full --no-fields" "$dir/full.nettrace" "$bin/examples/nettrace_read" "$dir/full.nettrace" --no-fields
measure "nettrace_read full --keep-pages" "$dir/full.nettrace" "$bin/examples/nettrace_read" "$dir/full.nettrace" --keep-pages
measure "nettrace_read half (ticks decoded)" "$dir/half.nettrace" "$bin/examples/nettrace_read" "$dir/half.nettrace"
measure "nettrace_read quarter (ticks decoded)" "$dir/quarter.nettrace" "$bin/examples/nettrace_read" "$dir/quarter.nettrace"
measure "count_records log (1 thread)" "$dir/same.log" "$bin/examples/count_records" "$dir/same.log"
measure "clrprof stats log (parallel)" "$dir/same.log" "$bin/clrprof" stats "$dir/same.log"
"$bin/examples/nettrace_read" "$dir/full.nettrace"
