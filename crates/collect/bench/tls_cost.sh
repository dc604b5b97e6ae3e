#!/usr/bin/env bash
# CPU per MB streamed over TLS against plain TCP: one collector (`clrprof
# collect`, with and without --tls) and one client (the streaming client
# the agent uses, `stream_bytes`), each timed by /usr/bin/time (user +
# system CPU), MB megabytes of log lines per run, RUNS runs each.
#
#   cargo build --release -p clrprof-cli -p clrprof-stream --example stream_bytes
#   bash crates/collect/bench/tls_cost.sh [MB] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../../.."
MB=${1:-256}
RUNS=${2:-3}
BIN=target/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for mode in plain tls; do
  for run in $(seq "$RUNS"); do
    dir="$work/$mode-$run"
    extra=()
    [ "$mode" = tls ] && extra=(--tls)
    /usr/bin/time -f "%U %S" -o "$work/collector.time" \
      "$BIN/clrprof" collect --listen 127.0.0.1:0 --dir "$dir" "${extra[@]}" > "$work/vars" 2> /dev/null &
    pid=$!
    want=2; [ "$mode" = tls ] && want=3
    while [ "$(wc -l < "$work/vars")" -lt "$want" ]; do sleep 0.05; done
    target=$(sed -n 's/^CLRPROF_TARGET=//p' "$work/vars")
    token=$(sed -n 's/^CLRPROF_TOKEN=//p' "$work/vars")
    fp=$(sed -n 's/^CLRPROF_TLS_FINGERPRINT=//p' "$work/vars")
    /usr/bin/time -f "%U %S" -o "$work/client.time" "$BIN/examples/stream_bytes" "$target" "$token" "$MB" $fp > /dev/null
    # The collector's own pid is time's child.
    pkill -INT -P "$pid" || true
    wait "$pid" || true
    read -r cu cs < "$work/collector.time"
    read -r u s < "$work/client.time"
    awk -v m="$mode" -v mb="$MB" -v cu="$cu" -v cs="$cs" -v u="$u" -v s="$s" 'BEGIN {
      printf "%-5s %4d MB  collector %6.2f s CPU (%5.2f ms/MB)  client %6.2f s CPU (%5.2f ms/MB)\n",
        m, mb, cu + cs, 1000 * (cu + cs) / mb, u + s, 1000 * (u + s) / mb }'
  done
done
