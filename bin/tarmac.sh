#!/usr/bin/env bash
# Runs the tarmac CLI from a checkout (TypeScript through tsx), from any directory.
# tsx's full loader (`dist/loader.mjs`, what `--import tsx` loads) registers both the CommonJS
# and the ESM hooks; the ESM-only hook would load bin/tarmac.ts as ESM and fail on its
# require() cycle back from infra/dev.ts.
here=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
exec node --import "$here/node_modules/tsx/dist/loader.mjs" "$here/bin/tarmac.ts" "$@"
