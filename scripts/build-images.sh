#!/usr/bin/env bash
# Builds Tarmac's images, each only when its inputs (Dockerfile dir + base image) changed.
# Offline (the default here), the bases are local debootstraps of Debian bookworm, fetched from the
# Debian mirror of this machine's apt configuration (or TARMAC_DEBIAN_MIRROR): git, ca-certificates,
# make, nodejs and npm, imported as tarmac/base:bookworm-2 (the runner, the agent images); git,
# ca-certificates, make, python3, pip and venv, imported as tarmac/base-python:bookworm-1 (the python
# image). Set TARMAC_BASE_IMAGE to build on a public image instead (e.g. debian:bookworm-slim); the
# python image then builds on python:3.11-slim-bookworm, or on TARMAC_PYTHON_BASE_IMAGE.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${TARMAC_CACHE_DIR:-$HOME/.cache/tarmac}
say() { printf '[images] %s\n' "$*" >&2; }
die() { printf '[images] error: %s\n' "$*" >&2; exit 1; }
export DOCKER_BUILDKIT=0  # the legacy builder needs no buildx plugin and no network

# Bump a suffix when its base's contents change: the tarball and the tag are both keyed by it.
base_version=2
python_base_version=1
offline_base="tarmac/base:bookworm-$base_version"
offline_python_base="tarmac/base-python:bookworm-$python_base_version"
base=${TARMAC_BASE_IMAGE:-$offline_base}
if [ -n "${TARMAC_PYTHON_BASE_IMAGE:-}" ]; then python_base=$TARMAC_PYTHON_BASE_IMAGE
elif [ -n "${TARMAC_BASE_IMAGE:-}" ]; then python_base=python:3.11-slim-bookworm
else python_base=$offline_python_base
fi

# The Debian mirror debootstrap fetches from: TARMAC_DEBIAN_MIRROR, else the first URI of this machine's
# apt sources for bookworm itself (deb822 stanzas in /etc/apt/sources.list.d/*.sources whose Suites name
# bookworm, then `deb` lines of /etc/apt/sources.list and sources.list.d/*.list), so no host is named here.
debian_mirror() {
  if [ -n "${TARMAC_DEBIAN_MIRROR:-}" ]; then echo "$TARMAC_DEBIAN_MIRROR"; return; fi
  local mirror sources=() lists=() file
  for file in /etc/apt/sources.list.d/*.sources; do [ -f "$file" ] && sources+=("$file"); done
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do [ -f "$file" ] && lists+=("$file"); done
  if [ "${#sources[@]}" -gt 0 ]; then
    mirror=$(awk '
      function flush() {
        if (!found && uris != "" && (" " suites " ") ~ / bookworm / && (" " types " ") ~ / deb / && tolower(enabled) != "no") { split(uris, u, " "); print u[1]; found = 1 }
        uris = ""; suites = ""; types = ""; enabled = ""
      }
      FNR == 1 { flush() }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      { key = tolower($1); value = $0; sub(/^[^:]*:[ \t]*/, "", value) }
      key == "uris:" { uris = value }
      key == "suites:" { suites = value }
      key == "types:" { types = value }
      key == "enabled:" { enabled = value }
      END { flush() }' "${sources[@]}")
  fi
  if [ -z "${mirror:-}" ] && [ "${#lists[@]}" -gt 0 ]; then
    mirror=$(awk '
      $1 != "deb" { next }
      { i = 2; if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ } }
      $(i + 1) == "bookworm" { print $i; exit }' "${lists[@]}")
  fi
  [ -n "${mirror:-}" ] || die "no Debian mirror for bookworm in the apt configuration (neither a URIs: of a /etc/apt/sources.list.d/*.sources stanza whose Suites include bookworm, nor a deb line of /etc/apt/sources.list); set TARMAC_DEBIAN_MIRROR"
  echo "$mirror"
}

# A local base image: a minbase debootstrap of bookworm with the --include packages, then the chroot
# packages added with apt-get inside it (npm cannot be in --include: it breaks debootstrap), cached as a
# tarball and imported as the tag. Once per version: an imported tag or a cached tarball is reused.
debootstrap_base() { # tag tarball include [chroot packages]
  local tag=$1 tarball=$2 include=$3 extra=${4:-} dir mirror
  if docker image inspect "$tag" >/dev/null 2>&1; then return; fi
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null || {
      say "installing debootstrap from apt"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2 || die "need debootstrap (apt-get install debootstrap, as root)"
    }
    mirror=$(debian_mirror) || exit 1
    mkdir -p "$cache" && dir=$(mktemp -d "$cache/debootstrap.XXXXXX") || die "cannot make a directory in $cache"
    trap "umount '$dir/proc' 2>/dev/null; rm -rf '$dir'" EXIT
    say "debootstrapping $tag (about a minute, once)"
    debootstrap --variant=minbase --include="$include" bookworm "$dir" "$mirror" >&2 \
      || die "debootstrap of $tag failed; see the output above"
    if [ -n "$extra" ]; then
      say "adding $extra to $tag (about a minute, once)"
      cp /etc/resolv.conf "$dir/etc/resolv.conf" && mount -t proc proc "$dir/proc" || die "cannot prepare the chroot of $tag"
      chroot "$dir" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $extra" >&2 \
        || { umount "$dir/proc"; die "installing $extra in $tag failed"; }
      umount "$dir/proc"
    fi
    # Package caches are not needed at run time; they only make the image bigger.
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/usr/share/doc/* "$dir"/usr/share/locale/*
    tar -C "$dir" -c . > "$tarball.tmp" && mv "$tarball.tmp" "$tarball" || die "cannot write $tarball"
    rm -rf "$dir"; trap - EXIT
  fi
  say "importing $tag"
  docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' "$tarball" "$tag" >/dev/null \
    || die "docker import of $tarball failed"
}
# The ID of a base image, debootstrapping it first when it is one of the offline bases. It runs in a
# command substitution, where set -e is off: every step above dies on failure by itself.
base_image_id() { # image
  case "$1" in
    "$offline_base") debootstrap_base "$1" "$cache/base-bookworm-$base_version.tar" git,ca-certificates,make,nodejs npm ;;
    "$offline_python_base") debootstrap_base "$1" "$cache/base-python-bookworm-$python_base_version.tar" git,ca-certificates,make,python3,python3-pip,python3-venv ;;
  esac
  docker image inspect --format '{{.Id}}' "$1" 2>/dev/null || die "base image $1 is not available (pull or build it)"
}

build() { # name dir [extra input text] [base image, default $base]
  local name=$1 dir=$2 extra=${3:-} from=${4:-$base} from_id inputs current
  from_id=$(base_image_id "$from") || return 1
  inputs=$( (echo "$from_id"; [ -z "$extra" ] || echo "$extra"; cd "$dir" && find . -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16)
  current=$(docker image inspect --format '{{index .Config.Labels "tarmac.inputs"}}' "$name" 2>/dev/null || true)
  if [ "$current" = "$inputs" ]; then say "$name is current ($inputs)"; return; fi
  say "building $name ($inputs)"
  docker build -q --build-arg "BASE_IMAGE=$from" --label "tarmac.inputs=$inputs" -t "$name" "$dir" >/dev/null \
    || die "docker build of $name failed"
}
# An agent image's build context, assembled in a temporary directory: its image directory, images/shared/
# as shared/ (the model forwarder, tarmac-run, the MCP shim) and, for a real CLI, the pinned binary from
# the cache (scripts/fetch-agent-clis.sh) as cli/, or its pinned wheels (scripts/fetch-aider.sh) as
# wheels/. The input hash covers all of it.
agent_image() { # name dir [cli-binary] [wheels-dir]
  local name=$1 dir=$2 bin=${3:-} wheels=${4:-} context
  context=$(mktemp -d "${TMPDIR:-/tmp}/tarmac-image.XXXXXX")
  cp -R "$dir/." "$context/"
  cp -R images/shared "$context/shared"
  if [ -n "$bin" ]; then mkdir "$context/cli"; cp "$bin" "$context/cli/"; fi
  if [ -n "$wheels" ]; then cp -R "$wheels" "$context/wheels"; fi
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

# Arguments: image directories to build (runner, python, agent-script, agent-claude-code, agent-codex, agent-opencode,
# agent-aider); default all.
wanted() { [ "${#only[@]}" -eq 0 ] || [[ " ${only[*]} " =~ " $1 " ]]; }
only=("$@")
wanted runner && build tarmac/runner:bookworm images/runner
wanted python && build tarmac/python:bookworm images/python "" "$python_base"
wanted agent-script && agent_image tarmac/agent-script:bookworm images/agent-script

# Real CLIs: tagged with the pinned version (recipes/harnesses.json names it).
for harness in claude-code codex opencode; do
  wanted "agent-$harness" || continue
  bin=$(cli_binary "$harness")
  [ -n "$bin" ] || continue
  version=$(node -p "require('./infra/agent-clis.json')['$harness'].version")
  agent_image "tarmac/agent-$harness:$version" "images/agent-$harness" "$bin"
done

# aider: tagged with the aider-chat version its lock pins, built from the wheels fetched for that lock.
if wanted agent-aider; then
  aider_version=$(sed -n 's/^aider-chat==\([^ ]*\).*/\1/p' images/agent-aider/requirements.lock)
  case "$(uname -m)" in x86_64) aider_arch=x64 ;; aarch64 | arm64) aider_arch=arm64 ;; *) aider_arch=$(uname -m) ;; esac
  aider_wheels="$cache/pkgs/aider-$aider_version-cp311-linux-$aider_arch"
  if cmp -s images/agent-aider/requirements.lock "$aider_wheels/requirements.lock"; then
    agent_image "tarmac/agent-aider:$aider_version" images/agent-aider "" "$aider_wheels"
  else
    say "warning: the aider $aider_version wheels are not in the cache ($aider_wheels); its image is not built (run scripts/fetch-aider.sh)"
  fi
fi
