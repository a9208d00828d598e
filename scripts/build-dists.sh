#!/usr/bin/env bash
# Build lakehook's three wheels (distributions/: lakehook, lakehook-tools, lakehook-client) into OUTDIR.
# Each is built from a copy of the source tree, so the build leaves no egg-info or build/ in src/shared.
# Usage: scripts/build-dists.sh OUTDIR [PIP]   (PIP defaults to .venv/bin/pip; setuptools comes from the index)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:?usage: build-dists.sh OUTDIR [PIP]}" && cd "$1" && pwd)"
pip="${2:-$root/.venv/bin/pip}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
cp -R "$root/src/shared" "$work/src/shared"
cp -R "$root/distributions" "$work/distributions"
find "$work/src" -depth \( -name __pycache__ -o -name '*.egg-info' \) -exec rm -rf {} +
for name in client lakehook tools; do
  "$pip" wheel --quiet --no-deps --wheel-dir "$out" "$work/distributions/$name"
done
ls "$out"
