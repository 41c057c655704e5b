#!/usr/bin/env bash
# Fetches the pinned agent CLIs (infra/agent-clis.json) into the per-user cache, idempotently:
#   <cache>/pkgs/<package>-<version>.tgz      the npm pack of the platform package (images copy it)
#   <cache>/pkgs/<name>-<version>-linux-<arch>/  the unpacked package, with its binary
# `npm pack` runs no install scripts (npm 11 holds them back anyway): the platform packages carry
# the native binaries themselves, so nothing else is downloaded. Fast when everything is there.
# Environment: TARMAC_CACHE_DIR (default ~/.cache/tarmac). Arguments: names to fetch (default all).
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${TARMAC_CACHE_DIR:-$HOME/.cache/tarmac}
pkgs="$cache/pkgs"
mkdir -p "$pkgs"
say() { printf '[fetch-agent-clis] %s\n' "$*" >&2; }
die() { printf '[fetch-agent-clis] error: %s\n' "$*" >&2; exit 1; }

case "$(uname -m)" in
  x86_64) arch=x64 triple=x86_64 ;;
  aarch64 | arm64) arch=arm64 triple=aarch64 ;;
  *) die "no pinned agent CLIs for $(uname -m)" ;;
esac
[ "$(uname -s)" = Linux ] || die "the pinned agent CLIs are the linux builds; this is $(uname -s)"

# name <TAB> spec <TAB> version <TAB> binary path inside the package, from the one pin file.
pins=$(node -e '
  const pins = require("./infra/agent-clis.json");
  for (const [name, pin] of Object.entries(pins)) if (!name.startsWith("$")) console.log([name, pin.spec, pin.version, pin.bin].join("\t"));
')
names=("$@")
while IFS=$'\t' read -r name spec version bin; do
  if [ "${#names[@]}" -gt 0 ] && [[ ! " ${names[*]} " =~ " $name " ]]; then continue; fi
  spec=${spec//\{arch\}/$arch}
  bin=${bin//\{arch\}/$arch}; bin=${bin//\{triple\}/$triple}
  dir="$pkgs/$name-$version-linux-$arch"
  if [ -x "$dir/$bin" ]; then say "$name $version: $dir/$bin"; continue; fi
  say "$name $version: npm pack $spec"
  tarball=$(cd "$pkgs" && npm pack --silent "$spec" | tail -n 1) || die "npm pack $spec failed"
  [ -f "$pkgs/$tarball" ] || die "npm pack $spec made no tarball"
  # Unpack beside, then rename: an interrupted run never leaves a half directory that looks done.
  rm -rf "$dir.partial"
  mkdir -p "$dir.partial"
  tar -xzf "$pkgs/$tarball" -C "$dir.partial" --strip-components=1
  [ -x "$dir.partial/$bin" ] || die "$spec has no executable $bin"
  rm -rf "$dir"
  mv "$dir.partial" "$dir"
  say "$name $version: $dir/$bin ($("$dir/$bin" --version 2>/dev/null | head -n 1))"
done <<<"$pins"
