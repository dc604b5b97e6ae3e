#!/usr/bin/env bash
# The sampled estimates (GC/AllocationTick) against a program's own counts:
# agent/testapps/estimates.cs (four threads: Quokka and Ocelot interleaved
# in a fixed pattern, Wren alternating with Wren[], a seeded random mix of
# Lynx and Cage<Den.Mole>, Den.Mole alone) traced by the runtime itself,
# RUNS times on .NET 8 and on CoreCLR 3.1. For each type and run: the
# estimated bytes against the program's (error), the samples the
# estimate rests on, and whether the truth lies in the 95% range clrprof
# gives ("in" or "OUT").
#
# Usage: scripts/estimates-vs-truth.sh [RUNS] [STEPS]   (default 3 runs of
# 2,000,000 steps per thread; needs scripts/setup-dotnet.sh, mcs and jq,
# and a release build of clrprof).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-3}"
steps="${2:-2000000}"
clrprof="${CLRPROF:-$root/target/release/clrprof}"
venv="${CLRPROF_DOTNET_VENV:-$root/target/dotnet-venv}"
site="$(echo "$venv"/lib/python3*/site-packages)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mcs -nowarn:649 -out:"$work/estimates.dll" "$root/agent/testapps/estimates.cs" >/dev/null
for rt in net8 core31; do
  dir="$work/$rt"
  mkdir -p "$dir"
  cp "$work/estimates.dll" "$dir/"
  version=8.0.0
  [ "$rt" = core31 ] && version=3.1.0
  echo "{\"runtimeOptions\":{\"framework\":{\"name\":\"Microsoft.NETCore.App\",\"version\":\"$version\"}}}" >"$dir/estimates.runtimeconfig.json"
  echo "== $rt"
  for n in $(seq 1 "$runs"); do
    rm -f "$dir"/*.nettrace
    if [ "$rt" = net8 ]; then
      (cd "$dir" && DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 DOTNET_EnableEventPipe=1 DOTNET_EventPipeOutputPath="$dir/t.nettrace" \
        DOTNET_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x1:5 "$site/dnv/net/runtime/.net/dotnet" estimates.dll "$steps" >truth.json)
    else
      # CoreCLR 3.1 crashes with COMPlus_EventPipeOutputPath set; it
      # writes estimates.PID.nettrace into the working directory.
      (cd "$dir" && DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 COMPlus_EnableEventPipe=1 \
        COMPlus_EventPipeConfig=Microsoft-Windows-DotNETRuntime:0x1:5 "$site/dotnetcore2/bin/dotnet" estimates.dll "$steps" >truth.json)
      mv "$dir"/estimates.*.nettrace "$dir/t.nettrace"
    fi
    "$clrprof" types "$dir/t.nettrace" --json -q >"$dir/types.json"
    echo "-- run $n"
    # The runtime names a nested type by its own name and a generic one
    # with its arguments in brackets.
    jq -r --slurpfile truth "$dir/truth.json" '
      def trace_name: if . == "Den.Mole" then "Mole" elif . == "Cage<Den.Mole>" then "Cage`1[Den+Mole]" else . end;
      . as $t | $truth[0].types | to_entries[] | .key as $k | (.value[0] * .value[1]) as $true
      | ($t.types[] | select(.type == ($k | trace_name))) as $r
      | "\($k)\t\((($r.bytes / $true - 1) * 1000 | round) / 10)%\t\($r.samples) samples\t\(if $r.bytes_range[0] <= $true and $true <= $r.bytes_range[1] then "in" else "OUT" end)"
    ' "$dir/types.json" | column -t -s $'\t'
  done
done
