#!/bin/sh
# Runs one fuzz target for a bounded time with the memory limit every run
# uses (libFuzzer's -rss_limit_mb=2048: an input that takes more memory
# fails the run like a panic), niced, seeded with fuzz/seeds/<target>
# (written by make_seeds.py) and what earlier runs found (corpus/<target>).
#
# Usage: fuzz/run.sh TARGET [SECONDS] [extra libFuzzer flags...]
# Targets: parse load nettrace gcdump wire control.
set -eu
cd "$(dirname "$0")"
target=${1:?usage: fuzz/run.sh TARGET [SECONDS]}
seconds=${2:-300}
[ $# -ge 2 ] && shift 2 || shift 1
timeout=30
case $target in
parse) max_len=16384 ;;
# Each input is loaded about a dozen times (parallel in chunks of 1-64
# bytes, sequential, growing): inputs of 16 KB at most, and one that fills
# the memory rule's allowance (the bomb seeds) takes seconds a load in the
# instrumented build.
load) max_len=16384 timeout=120 ;;
nettrace) max_len=262144 ;;
*) max_len=65536 ;;
esac
[ -d seeds/"$target" ] || python3 make_seeds.py
mkdir -p corpus/"$target" seeds/"$target"
exec nice cargo +nightly fuzz run -s none "$target" corpus/"$target" seeds/"$target" -- \
    -rss_limit_mb=2048 -max_len="$max_len" -timeout="$timeout" -max_total_time="$seconds" -print_final_stats=1 "$@"
