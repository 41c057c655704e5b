#!/usr/bin/env bash
# Installs the pinned Node (scripts/node-env.sh: the version, and the npm it ships with) into the cache,
# idempotently, as an official Node install is laid out:
#   <cache>/node-v<version>-<os>-<arch>/bin/node                 from the registry's node-<os>-<arch> package
#   <cache>/node-v<version>-<os>-<arch>/lib/node_modules/npm/    from the registry's npm package
#   <cache>/node-v<version>-<os>-<arch>/bin/npm, bin/npx         links to npm's own scripts
# Both are fetched with `npm pack` (the npm on PATH, any version; integrity checked against the registry,
# no install script runs): the platform package carries the official binary itself. The headers
# (include/) and docs are left out. Unpacked beside, then renamed: an interrupted run leaves nothing that
# looks done. Fast (no network) when the directory is there.
# Environment: TARMAC_CACHE_DIR (default ~/.cache/tarmac).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=node-env.sh
. "$here/node-env.sh"
say() { printf '[fetch-node] %s\n' "$*" >&2; }
die() { printf '[fetch-node] error: %s\n' "$*" >&2; exit 1; }

dir=$tarmac_node_dir
installed() { [ -x "$dir/bin/node" ] && [ "$("$dir/bin/node" --version 2>/dev/null)" = "v$tarmac_node_version" ] && [ -f "$dir/lib/node_modules/npm/package.json" ]; }
if installed; then say "node $tarmac_node_version: $dir/bin/node"; exit 0; fi

case "$tarmac_node_os-$tarmac_node_arch" in
  linux-x64 | linux-arm64 | darwin-x64 | darwin-arm64) ;;
  *) die "the registry has no node package for $(uname -s) $(uname -m); install Node $tarmac_node_major yourself and put it first on PATH" ;;
esac
command -v npm >/dev/null || die "npm is not on PATH; install any Node with npm (e.g. Debian's nodejs and npm): setup fetches Node $tarmac_node_version with it"

work=$(mktemp -d "${TMPDIR:-/tmp}/tarmac-node.XXXXXX")
trap 'rm -rf "$work"' EXIT
package="node-$tarmac_node_os-$tarmac_node_arch@$tarmac_node_version"
say "node $tarmac_node_version: npm pack $package and npm@$tarmac_npm_version (about 55 MB, once)"
node_tarball=$(cd "$work" && npm pack --silent "$package" | tail -n 1) || die "npm pack $package failed"
npm_tarball=$(cd "$work" && npm pack --silent "npm@$tarmac_npm_version" | tail -n 1) || die "npm pack npm@$tarmac_npm_version failed"

partial="$dir.partial"
rm -rf "$partial"
mkdir -p "$partial/lib/node_modules/npm"
tar -xzf "$work/$node_tarball" -C "$partial" --strip-components=1 package/bin/node package/LICENSE \
  || die "$package has no bin/node"
tar -xzf "$work/$npm_tarball" -C "$partial/lib/node_modules/npm" --strip-components=1 || die "could not unpack npm@$tarmac_npm_version"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$partial/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$partial/bin/npx"
[ "$("$partial/bin/node" --version 2>/dev/null)" = "v$tarmac_node_version" ] || die "$package's bin/node does not run here or is not v$tarmac_node_version"
[ "$("$partial/bin/node" "$partial/bin/npm" --version 2>/dev/null)" = "$tarmac_npm_version" ] || die "npm@$tarmac_npm_version does not run on node $tarmac_node_version"
rm -rf "$dir"
mv "$partial" "$dir"
say "node $tarmac_node_version: $dir/bin/node (npm $tarmac_npm_version)"
