#!/usr/bin/env bash
# Installs what the export tests (crates/export/tests) need to read each
# export with its consumer's own software, idempotently and quietly:
#   - Go, for `go tool pprof` (Debian golang-go),
#   - Node and npm (Debian nodejs, npm), then the `speedscope` package (its
#     published file-format schema) and Ajv from the committed
#     package-lock.json (npm ci) in crates/export/tests/speedscope,
#   - DuckDB for Python (PyPI duckdb) in a virtual environment, and
#     junitparser (PyPI) there too, which reads `clrprof check --junit`,
#   - PySpark (PyPI pyspark) there too, with Java (Debian
#     default-jre-headless) to run it in local mode over a dataset.
# The venv lives in target/export-venv (git-ignored) unless
# CLRPROF_EXPORT_VENV names another place; the tests look there. Under
# CI=true a test whose consumer is missing fails; elsewhere it is counted as
# ignored (crates/export/build.rs; touch it after installing).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${CLRPROF_EXPORT_VENV:-$root/target/export-venv}"
quiet() { "$@" >/dev/null 2>&1 || { echo "setup-export-tests: failed: $*" >&2; "$@"; }; }

missing=()
command -v go >/dev/null 2>&1 || missing+=(golang-go)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    quiet apt-get update -q
    quiet apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

checker="$root/crates/export/tests/speedscope"
if [ ! -f "$checker/node_modules/speedscope/package.json" ] || [ ! -f "$checker/node_modules/ajv/package.json" ]; then
    (cd "$checker" && quiet npm ci --no-audit --no-fund)
fi

if [ ! -x "$venv/bin/python" ]; then
    quiet python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import duckdb' >/dev/null 2>&1; then
    quiet "$venv/bin/pip" install -q --disable-pip-version-check duckdb==2.0.0
fi
if ! "$venv/bin/python" -c 'import junitparser' >/dev/null 2>&1; then
    quiet "$venv/bin/pip" install -q --disable-pip-version-check junitparser==5.0.3
fi
if ! "$venv/bin/python" -c 'import pyspark' >/dev/null 2>&1; then
    quiet "$venv/bin/pip" install -q --disable-pip-version-check pyspark==4.3.0
fi
echo "go: $(go version)"
echo "node: $(node --version), speedscope $(node -p "require('$checker/node_modules/speedscope/package.json').version")"
echo "duckdb: $("$venv/bin/python" -c 'import duckdb; print(duckdb.__version__)') in $venv"
echo "junitparser: $("$venv/bin/python" -c 'import junitparser; print(junitparser.version)') in $venv"
echo "pyspark: $("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)') in $venv, java: $(java -version 2>&1 | head -1)"
