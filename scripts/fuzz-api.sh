#!/usr/bin/env bash
# OpenAPI fuzz run: schemathesis reads the API's OpenAPI document (/docs/json), generates
# valid and invalid requests for every operation, and fails on any 5xx, undocumented status
# code or content type, response body or header that breaks the document, a 405 without
# Allow, an invalid request accepted, auth not enforced, or a response slower than 10 s.
#
#   TARMAC_FUZZ_URL=http://127.0.0.1:PORT TARMAC_FUZZ_TOKEN=… bash scripts/fuzz-api.sh [schemathesis run options]
#
# Only against a throwaway stack. The fuzzer POSTs made-up repo paths and git URLs: an API
# whose working directory is a git repository, or whose git may reach the network, would try
# them. test/infra/openapi-fuzz.test.ts (in `npm test`) runs this against a stack in temp
# dirs with git limited to file:// (GIT_ALLOW_PROTOCOL=file); run it alone with
#   bash scripts/test.sh test/infra/openapi-fuzz.test.ts
#
# Environment:
#   TARMAC_FUZZ_URL       API base URL (required)
#   TARMAC_FUZZ_TOKEN     bearer token (required)
#   TARMAC_FUZZ_RUN_ID    id of a finished landing: half the generated {id} path parameters use
#                         it, so the 200 answers (status, run, event stream) are checked too
#   TARMAC_FUZZ_EXAMPLES  examples per operation and phase, default 100 (about a minute on 2 cores)
#   TARMAC_FUZZ_SEED      default 20261130: the same seed generates the same requests
#   TARMAC_CACHE_DIR      default ~/.cache/tarmac; scripts/setup.sh --tests (npm test) installs schemathesis in its venv-schemathesis
#
# Checks: all of schemathesis' checks but positive_data_acceptance, which expects a schema-valid
# request to succeed; here schema-valid requests name repositories, branches and panels that do
# not exist, and the API rightly answers 400 naming the field.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TARMAC_CACHE_DIR:-$HOME/.cache/tarmac}
schemathesis="$cache/venv-schemathesis/bin/schemathesis"
[ -x "$schemathesis" ] || { echo "[fuzz] $schemathesis is missing; run bash scripts/setup.sh --tests" >&2; exit 2; }
url=${TARMAC_FUZZ_URL:?set TARMAC_FUZZ_URL to a throwaway API (see the header of this script)}
: "${TARMAC_FUZZ_TOKEN:?set TARMAC_FUZZ_TOKEN to a bearer token of that API}"
export TARMAC_FUZZ_TOKEN

# Schemathesis writes nothing here we want to keep: work in a temp dir, with the config copied in.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$root/scripts/fuzz-api.toml" "$work/schemathesis.toml"
if [ -n "${TARMAC_FUZZ_RUN_ID:-}" ]; then
  [[ $TARMAC_FUZZ_RUN_ID =~ ^[A-Za-z0-9._:-]+$ ]] || { echo "[fuzz] TARMAC_FUZZ_RUN_ID is not a run id: $TARMAC_FUZZ_RUN_ID" >&2; exit 2; }
  printf '\n[dictionaries.run-ids]\nvalues = ["%s"]\n\n[parameters]\n"path.id" = { dictionary = "run-ids", probability = 0.5 }\n' "$TARMAC_FUZZ_RUN_ID" >>"$work/schemathesis.toml"
fi
cd "$work"
status=0
"$schemathesis" --config-file "$work/schemathesis.toml" run "$url/docs/json" \
  --checks all --exclude-checks positive_data_acceptance \
  --max-examples "${TARMAC_FUZZ_EXAMPLES:-100}" --seed "${TARMAC_FUZZ_SEED:-20261130}" \
  --workers 1 --request-timeout 30 --generation-database none --no-color "$@" || status=$?
exit "$status"
