#!/usr/bin/env bash
# Fetches the pinned aider for the offline image build: every wheel images/agent-aider/requirements.lock
# names (aider-chat, each of its dependencies and pip, pinned with their hashes) into the per-user
# cache, idempotently:
#   <cache>/pkgs/aider-<version>-cp311-linux-<arch>/   the wheels, and the lock they were fetched for
# The wheels are those of the image's Python (Debian bookworm's python3, 3.11) on this machine's
# architecture, whichever Python runs this script: pip downloads binary wheels only, for that
# interpreter and platform, and checks each file against the lock's hashes. pip's index is the one of
# this machine's pip configuration (pip.conf, PIP_INDEX_URL): no host is named here. Nothing runs,
# nothing is built; fast when the wheels are there. The lock is made once per pin (its header says how).
# Environment: TARMAC_CACHE_DIR (default ~/.cache/tarmac).
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${TARMAC_CACHE_DIR:-$HOME/.cache/tarmac}
lock=images/agent-aider/requirements.lock
say() { printf '[fetch-aider] %s\n' "$*" >&2; }
die() { printf '[fetch-aider] error: %s\n' "$*" >&2; exit 1; }

case "$(uname -m)" in
  x86_64) arch=x64 triple=x86_64 ;;
  aarch64 | arm64) arch=arm64 triple=aarch64 ;;
  *) die "no pinned aider wheels for $(uname -m)" ;;
esac
version=$(sed -n 's/^aider-chat==\([^ ]*\).*/\1/p' "$lock")
[ -n "$version" ] || die "$lock pins no aider-chat"
dir="$cache/pkgs/aider-$version-cp311-linux-$arch"
# Done when the lock beside the wheels is this one (a changed lock fetches again).
if cmp -s "$lock" "$dir/requirements.lock"; then say "aider $version: $dir"; exit 0; fi

command -v python3 >/dev/null || die "python3 (with pip) is needed to fetch the aider wheels"
# Debian bookworm has glibc 2.36: any manylinux wheel up to manylinux_2_36 runs there.
platforms=()
for minor in $(seq 36 -1 17); do platforms+=(--platform "manylinux_2_${minor}_$triple"); done
platforms+=(--platform "manylinux2014_$triple")
say "aider $version: pip download of $(grep -c '^[a-z0-9]' "$lock") pinned wheels (cp311, $triple)"
rm -rf "$dir.partial"
mkdir -p "$dir.partial"
# Four pip processes on a quarter of the lock each (an entry is its pin line and its --hash lines):
# one pip fetches one file at a time, and four take half the time of one here.
parts=$(mktemp -d "${TMPDIR:-/tmp}/tarmac-aider-lock.XXXXXX")
trap 'rm -rf "$parts"' EXIT
awk -v dir="$parts" '/^#/ || /^$/ { next } /^[a-z0-9]/ { n++ } n { print > (dir "/part" (n % 4) ".txt") }' "$lock"
pids=()
for part in "$parts"/part*.txt; do
  # Fetched beside, then renamed: an interrupted run never leaves a directory that looks done.
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
    --implementation cp --python-version 3.11 --abi cp311 "${platforms[@]}" -r "$part" -d "$dir.partial" >&2 &
  pids+=("$!")
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" = 0 ] || die "pip download of the aider wheels failed (see above)"
[ "$(find "$dir.partial" -name '*.whl' | wc -l)" = "$(grep -c '^[a-z0-9]' "$lock")" ] || die "pip download left fewer wheels than the lock pins"
cp "$lock" "$dir.partial/requirements.lock"
rm -rf "$dir"
mv "$dir.partial" "$dir"
say "aider $version: $dir ($(find "$dir" -name '*.whl' | wc -l) wheels, $(du -sh "$dir" | cut -f1))"
