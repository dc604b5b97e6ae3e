#!/usr/bin/env bash
# Export time and output size of each format on one log (default: the
# seed-scale log, generated once into target/): runs
#   clrprof export LOG --format F -o OUT --json
# for pprof, speedscope and parquet, and prints the export's own time (the
# load excluded), the output size, the whole command's wall time and peak
# RSS (GNU time), and the CPU time the export used (all threads; the
# machine is shared, so wall times vary with the load). Usage: scripts/bench-export.sh [LOG]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CARGO_TARGET_DIR:-$root/target}/release/clrprof"
log="${1:-${CARGO_TARGET_DIR:-$root/target}/seed.log}"
if [ ! -f "$log" ]; then
    "$bin" gen --preset seed -o "$log"
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
log_bytes=$(stat -c %s "$log")
printf '%-10s %9s %10s %14s %8s %10s %12s\n' format export_s export_cpu_s output_bytes of_log command_s peak_rss_MB
for f in pprof speedscope parquet; do
    /usr/bin/time -f '%e %M' -o "$out/time" "$bin" export "$log" --format "$f" -o "$out/$f" --json >"$out/json"
    read -r wall rss <"$out/time"
    secs=$(python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["seconds"])' "$out/json")
    cpu=$(python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["cpu_seconds"])' "$out/json")
    bytes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes"])' "$out/json")
    printf '%-10s %9s %10s %14s %7.1f%% %10s %12s\n' "$f" "$secs" "$cpu" "$bytes" \
        "$(python3 -c "print($bytes * 100 / $log_bytes)")" "$wall" "$((rss / 1024))"
done
