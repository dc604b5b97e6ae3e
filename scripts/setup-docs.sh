#!/usr/bin/env bash
# Installs mdbook, which builds the guide (`mdbook build docs`), unless one
# is already on PATH: from crates.io, pinned, without the `serve` and
# `watch` features (a local web server and file watcher the build does not
# use), which keeps the install to about two minutes on two cores.
set -euo pipefail
if command -v mdbook >/dev/null 2>&1; then
    exit 0
fi
cargo install mdbook --version 0.5.4 --locked --no-default-features --features search --quiet
