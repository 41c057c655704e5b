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
# An agent image's build context, assembled in a temporary directory: its image directory, images/shared/
# as shared/ (the model forwarder, tarmac-run, the MCP shim) and, for a real CLI, the pinned binary from
# the cache (scripts/fetch-agent-clis.sh) as cli/. The input hash covers all of it.
agent_image() { # name dir [cli-binary]
  local name=$1 dir=$2 bin=${3:-} context
  context=$(mktemp -d "${TMPDIR:-/tmp}/tarmac-image.XXXXXX")
  cp -R "$dir/." "$context/"
  cp -R images/shared "$context/shared"
  if [ -n "$bin" ]; then mkdir "$context/cli"; cp "$bin" "$context/cli/"; fi
  build "$name" "$context" || { rm -rf "$context"; exit 1; }
  rm -rf "$context"
}
# A pinned CLI's cached binary (infra/agent-clis.json), or empty with a warning when it is not fetched.
cli_binary() { # harness
  local harness=$1 version bin arch triple
  version=$(node -p "require('./infra/agent-clis.json')['$harness'].version")
  case "$(uname -m)" in x86_64) arch=x64 triple=x86_64 ;; aarch64 | arm64) arch=arm64 triple=aarch64 ;; *) arch=$(uname -m) triple=$(uname -m) ;; esac
  bin=$(node -p "require('./infra/agent-clis.json')['$harness'].bin" | sed "s/{arch}/$arch/g; s/{triple}/$triple/g")
  bin="$cache/pkgs/$harness-$version-linux-$arch/$bin"
  if [ ! -x "$bin" ]; then
    say "warning: $harness $version is not in the cache ($bin); its image is not built (run scripts/fetch-agent-clis.sh)"
    return 0
  fi
  echo "$bin"
}

# Tarmac's own gate image (.config/tarmac/land-gate.json): the runner, plus the host's node and npm and
# this checkout's node_modules (images/self-gate/Dockerfile). Its inputs are the runner image, the
# Dockerfile, the node and npm versions and the installed dependency tree (node_modules/.package-lock.json),
# not every file under node_modules (hashing 400 MB on each setup would take longer than it saves).
self_gate_image() { # name
  local name=$1 node npm runner_id inputs current context
  node=$(readlink -f "$(command -v node)") || die "node is not on PATH"
  npm=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")") || die "npm is not on PATH"
  [ -f node_modules/.package-lock.json ] || die "node_modules is not installed (npm ci)"
  runner_id=$(docker image inspect --format '{{.Id}}' tarmac/runner:bookworm 2>/dev/null) || die "tarmac/runner:bookworm is not built"
  inputs=$( (echo "$runner_id"; "$node" --version; "$node" "$npm/bin/npm-cli.js" --version; sha256sum images/self-gate/Dockerfile node_modules/.package-lock.json) | sha256sum | cut -c1-16)
  current=$(docker image inspect --format '{{index .Config.Labels "tarmac.inputs"}}' "$name" 2>/dev/null || true)
  if [ "$current" = "$inputs" ]; then say "$name is current ($inputs)"; return; fi
  say "building $name ($inputs; node_modules is about 400 MB: a minute or two)"
  # Hard links when the temp dir is on the checkout's file system (no 400 MB copy), else a copy.
  context=$(mktemp -d "${TMPDIR:-/tmp}/tarmac-self-gate.XXXXXX")
  mkdir "$context/node"
  cp images/self-gate/Dockerfile "$context/"
  cp "$node" "$context/node/node"
  cp -R "$npm" "$context/node/npm"
  cp -al node_modules "$context/node_modules" 2>/dev/null || cp -R node_modules "$context/node_modules"
  docker build -q --build-arg BASE_IMAGE=tarmac/runner:bookworm --label "tarmac.inputs=$inputs" -t "$name" "$context" >/dev/null \
    || { rm -rf "$context"; die "docker build of $name failed"; }
  rm -rf "$context"
}

# Arguments: image directories to build (runner, agent-script, self-gate, agent-claude-code, agent-codex); default all.
wanted() { [ "${#only[@]}" -eq 0 ] || [[ " ${only[*]} " =~ " $1 " ]]; }
only=("$@")
wanted runner && build tarmac/runner:bookworm images/runner
wanted agent-script && agent_image tarmac/agent-script:bookworm images/agent-script
wanted self-gate && self_gate_image tarmac/self-gate:local

# Real CLIs: tagged with the pinned version (recipes/harnesses.json names it).
for harness in claude-code codex; do
  wanted "agent-$harness" || continue
  bin=$(cli_binary "$harness")
  [ -n "$bin" ] || continue
  version=$(node -p "require('./infra/agent-clis.json')['$harness'].version")
  agent_image "tarmac/agent-$harness:$version" "images/agent-$harness" "$bin"
done
