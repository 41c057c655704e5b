#!/usr/bin/env bash
# Runs the tarmac CLI from a checkout (TypeScript through tsx), from any directory.
# tsx's full loader (`dist/loader.mjs`, what `--import tsx` loads) registers both the CommonJS
# and the ESM hooks; the ESM-only hook would load bin/tarmac.ts as ESM and fail on its
# require() cycle back from infra/dev.ts.
here=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
# Node 24 (package.json engines): the node on PATH when it is that new, else the one scripts/setup.sh
# put in the cache; `tarmac dev` starts its worker and API on the same node (process.execPath).
. "$here/scripts/node-env.sh"
tarmac_node_ok || printf '[tarmac] warning: node %s is older than %s (package.json engines); run scripts/setup.sh, which installs node %s\n' \
  "$(node --version 2>/dev/null || echo '(none)')" "$tarmac_node_major" "$tarmac_node_version" >&2
exec node --import "$here/node_modules/tsx/dist/loader.mjs" "$here/bin/tarmac.ts" "$@"
