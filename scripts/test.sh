#!/usr/bin/env bash
# The whole test suite: typecheck, lint, unit tests (pure code), infra checks, the Temporal server on
# PostgreSQL with two worker hosts (test/cluster), then end-to-end tests against a real Temporal dev
# server, the real Docker engine and real git, and last the chaos suite at its bounded size (test/chaos).
# Run through `npm test`, which runs `scripts/setup.sh --tests --cluster` first (what only the tests need).
set -euo pipefail
cd "$(dirname "$0")/.."
# Node 24 (package.json engines): the node on PATH when it is that new, else the one setup put in the cache.
# `npm test` may be started by an older npm's node (CI's system Node); the suite must not run on that.
. scripts/node-env.sh
tarmac_node_ok || { echo "[test] error: node $(node --version 2>/dev/null || echo '(none)') is older than $tarmac_node_major (package.json engines); run scripts/setup.sh --tests, which installs node $tarmac_node_version" >&2; exit 1; }
echo "[test] node $(node --version) ($(command -v node))"
# The tests make their own stacks: a developer's .env (tokens, keys, ports) must not reach them.
export TARMAC_ENV_FILE=
echo "[test] typecheck"; npx tsc --noEmit -p tsconfig.json
echo "[test] lint"; npx eslint .
shopt -s nullglob
files=(test/unit/*.test.ts test/infra/*.test.ts test/cluster/*.test.ts test/e2e/*.test.ts test/scenarios/*.test.ts test/security/*.test.ts test/chaos/*.test.ts)
if [ "$#" -gt 0 ]; then files=("$@"); fi
echo "[test] ${#files[@]} test files"
# A TAP record of the run beside the spec output: when the run fails, its failing entries (with a file's
# exit code and signal, which the spec reporter leaves out) and the diagnostics the files printed (an
# error thrown after a test ended is one) are printed again last, where a log's tail shows them.
record="${TARMAC_TEST_RECORD:-artifacts/test-run.tap}"
mkdir -p "$(dirname "$record")"
status=0
node --import tsx --test --test-reporter=spec --test-reporter-destination=stdout --test-reporter=tap --test-reporter-destination="$record" \
  --test-concurrency=1 "${files[@]}" || status=$?
if [ "$status" -ne 0 ]; then
  echo "[test] failed (status $status); from the TAP record $record:"
  echo "[test] the diagnostics the test files printed that name an error (the last 30):"
  grep -E '^ *# ' "$record" | grep -vE '^ *# (Subtest: |tests |suites |pass |fail |cancelled |skipped |todo |duration_ms )' | grep -iE 'error|asynchronous activity|warning|exited|signal' | tail -n 30 || true
  echo "[test] the failing entries:"
  # Each `not ok` line with its YAML block (up to the block's `...`), error text cut at 40 lines a block.
  awk '/^ *not ok /{on=1; n=0} on{ if (n < 40) print; n++ } on && /^ *\.\.\.$/{on=0}' "$record" | tail -n 120
fi
exit "$status"
