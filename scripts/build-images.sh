#!/usr/bin/env bash
# Builds Tarmac's images, each only when its inputs (Dockerfile dir + base image) changed.
# Offline (the default here), the base is a local debootstrap of Debian bookworm with
# git, ca-certificates, make, nodejs and npm, imported as tarmac/base:bookworm-2; set
# TARMAC_BASE_IMAGE to build on a public image instead (e.g. debian:bookworm-slim).
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${TARMAC_CACHE_DIR:-$HOME/.cache/tarmac}
say() { printf '[images] %s\n' "$*" >&2; }
die() { printf '[images] error: %s\n' "$*" >&2; exit 1; }
export DOCKER_BUILDKIT=0  # the legacy builder needs no buildx plugin and no network

# Bump the suffix when the base's contents change: the tarball and the tag are both keyed by it.
base_version=2
offline_base="tarmac/base:bookworm-$base_version"
base=${TARMAC_BASE_IMAGE:-$offline_base}
if [ "$base" = "$offline_base" ] && ! docker image inspect "$base" >/dev/null 2>&1; then
  tarball="$cache/base-bookworm-$base_version.tar"
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null || {
      say "installing debootstrap from apt"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2 || die "need debootstrap (apt-get install debootstrap, as root)"
    }
    dir=$(mktemp -d "$cache/debootstrap.XXXXXX")
    trap 'umount "$dir/proc" 2>/dev/null; rm -rf "$dir"' EXIT
    say "debootstrapping the offline base image (about a minute, once)"
    debootstrap --variant=minbase --include=git,ca-certificates,make,nodejs bookworm "$dir" http://deb.debian.org/debian >&2 \
      || die "debootstrap failed; see the output above"
    # npm cannot be in --include (it breaks debootstrap); add it in a chroot, /proc bound.
    say "adding npm to the base (about a minute, once)"
    cp /etc/resolv.conf "$dir/etc/resolv.conf"
    mount -t proc proc "$dir/proc"
    chroot "$dir" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm' >&2 \
      || { umount "$dir/proc"; die "installing npm in the base failed"; }
    umount "$dir/proc"
    # Package caches are not needed at run time; they only make the image bigger.
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/usr/share/doc/* "$dir"/usr/share/locale/*
    tar -C "$dir" -c . > "$tarball.tmp" && mv "$tarball.tmp" "$tarball"
    rm -rf "$dir"; trap - EXIT
  fi
  say "importing $base"
  docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' "$tarball" "$base" >/dev/null
fi
base_id=$(docker image inspect --format '{{.Id}}' "$base" 2>/dev/null) || die "base image $base is not available (pull or build it)"

build() { # name dir [extra input text]
  local name=$1 dir=$2 extra=${3:-} inputs current
  inputs=$( (echo "$base_id"; [ -z "$extra" ] || echo "$extra"; cd "$dir" && find . -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16)
  current=$(docker image inspect --format '{{index .Config.Labels "tarmac.inputs"}}' "$name" 2>/dev/null || true)
  if [ "$current" = "$inputs" ]; then say "$name is current ($inputs)"; return; fi
  say "building $name ($inputs)"
  docker build -q --build-arg "BASE_IMAGE=$base" --label "tarmac.inputs=$inputs" -t "$name" "$dir" >/dev/null \
    || die "docker build of $name failed"
}
# Arguments: image directories to build (runner, agent-script, agent-claude-code); default all.
wanted() { [ "${#only[@]}" -eq 0 ] || [[ " ${only[*]} " =~ " $1 " ]]; }
only=("$@")
wanted runner && build tarmac/runner:bookworm images/runner
wanted agent-script && build tarmac/agent-script:bookworm images/agent-script

# Claude Code: the pinned binary from the cache (scripts/fetch-agent-clis.sh), images/shared/ and
# the Dockerfile, in a build context assembled here. The tag is the pinned version
# (recipes/harnesses.json names it); the input hash covers the binary and its version.
if wanted agent-claude-code; then
  claude_version=$(node -p 'require("./infra/agent-clis.json")["claude-code"].version')
  case "$(uname -m)" in x86_64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
  claude_bin="$cache/pkgs/claude-code-$claude_version-linux-$arch/claude"
  if [ ! -x "$claude_bin" ]; then
    say "warning: Claude Code $claude_version is not in the cache ($claude_bin); tarmac/agent-claude-code:$claude_version not built (run scripts/fetch-agent-clis.sh)"
  else
    context=$(mktemp -d "${TMPDIR:-/tmp}/tarmac-image-claude.XXXXXX")
    trap 'rm -rf "$context"' EXIT
    cp images/agent-claude-code/Dockerfile "$context/Dockerfile"
    cp -R images/shared "$context/shared"
    cp "$claude_bin" "$context/claude"
    build "tarmac/agent-claude-code:$claude_version" "$context" "claude-code $claude_version"
    rm -rf "$context"; trap - EXIT
  fi
fi
