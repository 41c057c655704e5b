#!/usr/bin/env bash
# Runs the tarmac CLI from a checkout (TypeScript through tsx).
here=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
exec node --import "$here/node_modules/tsx/dist/esm/index.mjs" "$here/bin/tarmac.ts" "$@"
