# The Node the project runs and is tested on (package.json `engines`: Node 24), for every entry point.
# When the `node` on PATH is older, the pinned Node that scripts/fetch-node.sh puts in the cache
# ($TARMAC_CACHE_DIR, default ~/.cache/tarmac: node-v<version>-<os>-<arch>/, with its npm) goes first
# on PATH; when the node on PATH already is new enough, nothing changes. Used three ways:
#   . scripts/node-env.sh              (scripts/setup.sh, scripts/test.sh, bin/tarmac.sh; or your shell)
#                                      then `tarmac_node_ok` says whether the node on PATH is new enough
#   bash scripts/node-env.sh CMD ARGS  runs CMD with that PATH (the npm scripts of package.json)
#   bash scripts/node-env.sh           prints the node it finds; status 1 when it is too old or missing
# Safe under `set -euo pipefail`; defines tarmac_node_* names only.
tarmac_node_major=24
tarmac_node_version=24.22.3
# The npm that Node $tarmac_node_version ships with (its CHANGELOG); the registry's node package has no npm.
tarmac_npm_version=11.19.1

case "$(uname -s)" in Linux) tarmac_node_os=linux ;; Darwin) tarmac_node_os=darwin ;; *) tarmac_node_os=$(uname -s) ;; esac
case "$(uname -m)" in x86_64 | amd64) tarmac_node_arch=x64 ;; aarch64 | arm64) tarmac_node_arch=arm64 ;; *) tarmac_node_arch=$(uname -m) ;; esac
tarmac_node_dir="${TARMAC_CACHE_DIR:-${HOME:-/tmp}/.cache/tarmac}/node-v$tarmac_node_version-$tarmac_node_os-$tarmac_node_arch"

# The major version of the node on PATH (0 when there is none).
tarmac_node_current_major() {
  local version
  version=$(node --version 2>/dev/null) || version=v0
  version=${version#v}
  printf '%s\n' "${version%%.*}"
}
tarmac_node_ok() { [ "$(tarmac_node_current_major)" -ge "$tarmac_node_major" ] 2>/dev/null; }

if ! tarmac_node_ok && [ -x "$tarmac_node_dir/bin/node" ]; then
  PATH="$tarmac_node_dir/bin:$PATH"
  export PATH
  # Under `npm run`, these name the node that started npm; children that read them get this one.
  if [ -n "${npm_node_execpath:-}" ]; then export npm_node_execpath="$tarmac_node_dir/bin/node"; fi
  if [ -n "${NODE:-}" ]; then export NODE="$tarmac_node_dir/bin/node"; fi
fi

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  if [ "$#" -gt 0 ]; then
    tarmac_node_ok || printf '[tarmac] warning: node %s is older than %s (package.json engines) and %s is not installed; run scripts/setup.sh\n' \
      "$(node --version 2>/dev/null || echo '(none)')" "$tarmac_node_major" "$tarmac_node_dir" >&2
    exec "$@"
  fi
  if tarmac_node_ok; then printf 'node %s at %s\n' "$(node --version)" "$(command -v node)"; exit 0; fi
  printf 'node %s on PATH is older than %s and %s is not installed (scripts/setup.sh installs it)\n' \
    "$(node --version 2>/dev/null || echo '(none)')" "$tarmac_node_major" "$tarmac_node_dir" >&2
  exit 1
fi
