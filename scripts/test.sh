#!/usr/bin/env bash
# The whole test suite: every test file — the unit tests in one process (test/run-unit.ts), infra
# checks, the Temporal server on PostgreSQL with two worker hosts (test/cluster), end-to-end tests
# against a real Temporal dev server, the real Docker engine and real git, scenarios and attacks —
# three files at a time, slowest first (TARMAC_TEST_CONCURRENCY, default 3: each file has a stack of
# its own, on ports of its own), with typecheck and lint beside them at the lowest CPU priority; and
# last, alone, the chaos suite at its bounded size (test/chaos: its time ratio must not measure
# another file's load).
# Run through `npm test`, which runs `scripts/setup.sh --tests --cluster` first (what only the tests need).
# With file arguments: just those files, one at a time (typecheck and lint beside them).
set -euo pipefail
cd "$(dirname "$0")/.."
# Node 24 (package.json engines): the node on PATH when it is that new, else the one setup put in the cache.
# `npm test` may be started by an older npm's node (CI's system Node); the suite must not run on that.
. scripts/node-env.sh
tarmac_node_ok || { echo "[test] error: node $(node --version 2>/dev/null || echo '(none)') is older than $tarmac_node_major (package.json engines); run scripts/setup.sh --tests, which installs node $tarmac_node_version" >&2; exit 1; }
echo "[test] node $(node --version) ($(command -v node))"
# The tests make their own stacks: a developer's .env (tokens, keys, ports) must not reach them.
export TARMAC_ENV_FILE=
started=$(date +%s)
elapsed() { echo "$(( $(date +%s) - started )) s"; }

# Typecheck and lint run beside the test files at the lowest CPU priority (nice 19): they take the
# CPU the files leave idle (a run of them is CPU-bound) and cost the files little. Their output is
# printed, and their result counted, once they are done, before the chaos suite starts alone.
echo "[test] typecheck and lint: started beside the test files"
checks_log=$(mktemp)
(
  checks_status=0
  nice -n 19 npx tsc --noEmit -p tsconfig.json &
  typecheck_pid=$!
  nice -n 19 npx eslint . || { checks_status=1; echo "[test] eslint failed"; }
  nice -n 19 npx knip || { checks_status=1; echo "[test] knip failed"; }
  wait "$typecheck_pid" || { checks_status=1; echo "[test] typecheck failed"; }
  echo "[test] typecheck and lint done at $(elapsed)"
  exit "$checks_status"
) >"$checks_log" 2>&1 &
checks_pid=$!
# Waits for typecheck and lint (once), prints what they said, and counts their result in the status.
checks_done() {
  [ -n "$checks_pid" ] || return 0
  local checks_status=0
  wait "$checks_pid" || checks_status=$?
  checks_pid=
  cat "$checks_log"; rm -f "$checks_log"
  if [ "$checks_status" -ne 0 ]; then echo "[test] typecheck and lint: failed"; status=1; else echo "[test] typecheck and lint: passed"; fi
}

shopt -s nullglob
concurrency="${TARMAC_TEST_CONCURRENCY:-3}"
if [ "$#" -gt 0 ]; then
  files=("$@"); concurrency=1; alone=()
else
  files=(test/run-unit.ts test/infra/*.test.ts test/cluster/*.test.ts test/e2e/*.test.ts test/scenarios/*.test.ts test/security/*.test.ts)
  alone=(test/chaos/*.test.ts)
fi
record="${TARMAC_TEST_RECORD:-artifacts/test-run.tap}"
mkdir -p "$(dirname "$record")"
rm -f "$record"
status=0

# One run over a list of files (test/run-files.ts: `node --test`'s runner, the files in the order
# given): spec output to the log, a TAP record (appended to $record: when the run fails, its failing
# entries — with a file's exit code and signal, which the spec reporter leaves out — and the
# diagnostics the files printed are printed again last, where a log's tail shows them) and the time of
# each file (test/reporters/file-times.mts). The files start slowest first (test/order-files.ts).
run_files() {
  local n="$1" part="$2"; shift 2
  echo "[test] $# test files, $n at a time"
  local ordered
  mapfile -t ordered < <(node --import tsx test/order-files.ts "$@")
  node --import tsx test/run-files.ts "$n" "$record.$part" "${ordered[@]}" || status=$?
  cat "$record.$part" >>"$record"; rm -f "$record.$part"
  echo "[test] $part: $(elapsed)"
}
run_files "$concurrency" files "${files[@]}"
checks_done
if [ "${#alone[@]}" -gt 0 ]; then TARMAC_TEST_TIMES=artifacts/test-file-times-alone.json run_files 1 alone "${alone[@]}"; fi

if [ "$status" -ne 0 ]; then
  echo "[test] failed (status $status); from the TAP record $record:"
  echo "[test] the diagnostics the test files printed that name an error (the last 30):"
  grep -E '^ *# ' "$record" | grep -vE '^ *# (Subtest: |tests |suites |pass |fail |cancelled |skipped |todo |duration_ms )' | grep -iE 'error|asynchronous activity|warning|exited|signal' | tail -n 30 || true
  echo "[test] the failing entries:"
  # Each `not ok` line with its YAML block (up to the block's `...`), error text cut at 40 lines a block.
  awk '/^ *not ok /{on=1; n=0} on{ if (n < 40) print; n++ } on && /^ *\.\.\.$/{on=0}' "$record" | tail -n 120
fi
echo "[test] done in $(elapsed) (setup not included)"
exit "$status"
