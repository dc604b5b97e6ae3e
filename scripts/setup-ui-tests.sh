#!/usr/bin/env bash
# What the browser tests of `clrprof ui` (crates/cli/tests/ui_browser.rs)
# need: Debian's chromium (/usr/bin/chromium), Node.js with npm, and
# playwright-core from the npm registry, installed with `npm ci` from the
# committed lockfile in crates/ui/browser (playwright-core downloads no
# browser of its own). Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "setup-ui-tests: installing ${missing[*]} (apt)" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
cd crates/ui/browser
npm ci --no-audit --no-fund --loglevel=error
echo "setup-ui-tests: node $(node --version), $(/usr/bin/chromium --version 2>/dev/null | tail -1), playwright-core $(node -p "require('playwright-core/package.json').version")" >&2
