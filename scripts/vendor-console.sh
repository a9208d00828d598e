#!/usr/bin/env bash
# Re-vendor the console's third-party JavaScript into the lakehook package (run by hand; needs npm).
# The result is committed, so a fresh clone, the CLI and the console need no npm and no network.
# Pinned here; vendor/VENDORED.txt records each file's version, source and SHA-256 (a unit test checks them).
set -euo pipefail

DAGRE=3.1.3      # @dagrejs/dagre: layered (Sugiyama) graph layout; its ESM build bundles @dagrejs/graphlib
GRAPHLIB=4.0.6   # @dagrejs/graphlib: only its licence (its code is inside dagre's bundle)

root="$(cd "$(dirname "$0")/.." && pwd)"
vendor="$root/src/shared/lakehook/console/static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "@dagrejs/dagre@$DAGRE" "@dagrejs/graphlib@$GRAPHLIB" >/dev/null)
mkdir -p "$work/dagre" "$work/graphlib"
tar -xzf "$work/dagrejs-dagre-$DAGRE.tgz" -C "$work/dagre"
tar -xzf "$work/dagrejs-graphlib-$GRAPHLIB.tgz" -C "$work/graphlib"

rm -rf "$vendor" && mkdir -p "$vendor"
# The source map is not shipped; drop the comment that would make a browser ask for it.
grep -v '^//# sourceMappingURL=' "$work/dagre/package/dist/dagre.esm.js" > "$vendor/dagre.esm.js"
cp "$work/dagre/package/LICENSE" "$vendor/LICENSE.dagre.txt"
cp "$work/graphlib/package/LICENSE" "$vendor/LICENSE.graphlib.txt"

{
  echo "# file  package@version  sha256 (written by scripts/vendor-console.sh; do not edit)"
  for file in dagre.esm.js LICENSE.dagre.txt; do
    echo "$file  @dagrejs/dagre@$DAGRE  $(sha256sum "$vendor/$file" | cut -d' ' -f1)"
  done
  echo "LICENSE.graphlib.txt  @dagrejs/graphlib@$GRAPHLIB  $(sha256sum "$vendor/LICENSE.graphlib.txt" | cut -d' ' -f1)"
} > "$vendor/VENDORED.txt"
echo "vendored into $vendor:"
cat "$vendor/VENDORED.txt"
