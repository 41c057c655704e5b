#!/usr/bin/env bash
# Idempotent setup for Tarmac on a bare machine; fast when everything is already there.
# Without arguments (`npm run up`): what running Tarmac needs. `--tests` (`npm test`) adds what only the
# test suite needs (marked [tests] below); `--cluster` what test/cluster needs.
#   0. Node 24 (package.json engines), first: when the node on PATH is older, the pinned Node and its npm
#      from the npm registry into ~/.cache/tarmac/node-v<version>-<os>-<arch> (scripts/fetch-node.sh, once),
#      put first on PATH for the rest of setup (scripts/node-env.sh, which every entry point sources)
#   1. node dependencies (npm ci when the lockfile changed): without the devDependencies (TypeScript,
#      ESLint, playwright-core, Temporal's test server…); [tests] with them (a run-only install is
#      completed: node_modules/.tarmac-omit-dev marks one)
#   2. the temporal CLI (PATH, else ~/.cache/tarmac/bin, else go install from the module proxy)
#   3. a Docker engine (a running one, else docker.io from apt and dockerd in the background);
#      [tests] a compose tool (Debian's docker-compose) for the compose file's test
#   4. the agent CLIs (scripts/fetch-agent-clis.sh: pinned npm platform packages into the cache; and
#      scripts/fetch-aider.sh: aider's pinned wheels, by pip from its configured index)
#   5. images: tarmac/runner, tarmac/python (the base of Python repositories' environments),
#      tarmac/agent-script and (from the cached CLIs) tarmac/agent-claude-code,
#      tarmac/agent-codex, tarmac/agent-opencode and tarmac/agent-aider; each rebuilt only when its
#      inputs change (Tarmac's own gate needs no image of its own: its gate file declares its
#      environment, which the worker builds)
#   6. [tests] Debian's chromium for the browser tests (apt, only when /usr/bin/chromium is missing)
#   7. [tests] schemathesis (pinned, from PyPI) in a venv in the cache, for the OpenAPI fuzz test
#   8. the prebuilt workflow bundle (npm run build:workflows → dist/workflow-bundle.js), rebuilt only when
#      the workflow sources changed; workers load it while it is current; and the dashboard
#      (npm run build:dashboard → dist/dashboard/)
#  10. (before 9) [tests] Temporal's time-skipping test server, the JVM build from Maven Central
#      (scripts/fetch-test-server.sh: a JRE and maven from apt when missing), for
#      test/e2e/long-waits.test.ts; fetched once into the cache
#   9. with --cluster only (what test/cluster needs; `npm run up` needs none of it): Debian's PostgreSQL
#      server (apt, when no initdb is found) and its `postgres` user, and the Temporal server and its
#      schema tool built from the Go module proxy (a few minutes, once) with the schema files, cached
#      in ~/.cache/tarmac/temporal-server-<version>/
# Environment: TARMAC_BASE_IMAGE (use this base instead of the offline debootstrap one; the python image
# then builds on python:3.11-slim-bookworm or TARMAC_PYTHON_BASE_IMAGE), TARMAC_DEBIAN_MIRROR (the
# debootstrap mirror; default: the apt configuration's), TARMAC_SKIP_IMAGES=1, TARMAC_CACHE_DIR
# (default ~/.cache/tarmac).
set -euo pipefail
cluster=0
tests=0
for argument in "$@"; do
  case "$argument" in
    --cluster) cluster=1 ;;
    --tests) tests=1 ;;
    *) printf '[setup] error: unknown argument %s (--tests, --cluster)\n' "$argument" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
root=$(pwd)
cache=${TARMAC_CACHE_DIR:-$HOME/.cache/tarmac}
mkdir -p "$cache/bin"
say() { printf '[setup] %s\n' "$*" >&2; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

# 0. Node 24 ------------------------------------------------------------------------
# The project runs and is tested on Node 24. A node on PATH that new is used as it is; else the pinned
# one in the cache, fetched once from the npm registry (with the system's npm), so that npm ci, the
# builds below and everything after setup (scripts/test.sh, bin/tarmac.sh) run on it.
. "$root/scripts/node-env.sh"
if ! tarmac_node_ok; then
  say "node $(node --version 2>/dev/null || echo '(none)') on PATH is older than $tarmac_node_major: installing node $tarmac_node_version into the cache"
  bash "$root/scripts/fetch-node.sh" || die "could not install node $tarmac_node_version; see the error above"
  . "$root/scripts/node-env.sh"
  tarmac_node_ok || die "node $tarmac_node_version is installed in $tarmac_node_dir but does not run"
fi
say "node $(node --version): $(command -v node) (npm $(npm --version))"

# 1. Node dependencies ------------------------------------------------------------
# Running needs the dependencies only; the tests also the devDependencies. An install without them
# leaves a marker, so that --tests completes it (npm ci starts from an empty node_modules).
omit_dev_marker=node_modules/.tarmac-omit-dev
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ] || { [ "$tests" = 1 ] && [ -f "$omit_dev_marker" ]; }; then
  if [ "$tests" = 1 ]; then
    say "installing node dependencies with the development tools (npm ci)"
    npm ci --no-audit --no-fund >&2
  else
    say "installing node dependencies (npm ci --omit=dev; npm test adds the development tools)"
    npm ci --omit=dev --no-audit --no-fund >&2
    touch "$omit_dev_marker"
  fi
fi

# 2. Temporal CLI ------------------------------------------------------------------
temporal_bin=${TARMAC_TEMPORAL_BIN:-}
if [ -z "$temporal_bin" ]; then
  if command -v temporal >/dev/null; then temporal_bin=$(command -v temporal)
  elif [ -x "$cache/bin/temporal" ]; then temporal_bin="$cache/bin/temporal"
  fi
fi
if [ -z "$temporal_bin" ]; then
  command -v go >/dev/null || die "the temporal CLI is missing and Go is not installed; install Go or put 'temporal' on PATH (https://docs.temporal.io/cli)"
  for version in v1.5.1 v1.4.1; do
    say "building the temporal CLI $version from the Go module proxy (a few minutes, once)"
    if CGO_ENABLED=0 GOBIN="$cache/bin" go install "github.com/temporalio/cli/cmd/temporal@$version" >&2; then
      temporal_bin="$cache/bin/temporal"; break
    fi
  done
  [ -n "$temporal_bin" ] || die "could not build the temporal CLI (v1.5.1 nor v1.4.1); see the go errors above"
fi
say "temporal CLI: $temporal_bin"

# 3. Docker engine -----------------------------------------------------------------
docker_ok() { docker info >/dev/null 2>&1; }
if ! docker_ok; then
  if ! command -v dockerd >/dev/null; then
    [ -f /etc/debian_version ] || die "no Docker engine is running; start one (this script installs docker.io only on Debian)"
    say "installing docker.io from apt"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed (need root)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >&2 || die "apt-get install docker.io failed"
  fi
  if ! docker_ok; then
    say "starting dockerd in the background (log: $cache/dockerd.log)"
    # No bridge, no iptables: containers get network 'none' (Tarmac never gives a container another one).
    as_root setsid nohup dockerd --bridge=none --iptables=false --ip-masq=false >"$cache/dockerd.log" 2>&1 < /dev/null &
    for _ in $(seq 1 60); do docker_ok && break; sleep 1; done
    docker_ok || die "dockerd did not come up within 60 s; see $cache/dockerd.log"
  fi
fi
say "docker engine: $(docker version --format '{{.Server.Version}}' 2>/dev/null)"
# The test suite validates docker-compose.yml with a compose tool.
if [ "$tests" = 1 ] && ! command -v docker-compose >/dev/null && ! docker compose version >/dev/null 2>&1 && [ -f /etc/debian_version ]; then
  say "installing docker-compose from apt (validates docker-compose.yml in the tests)"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >&2 \
    || { as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >&2; } \
    || say "warning: could not install docker-compose; the compose test will fail"
fi

# 4. Agent CLIs --------------------------------------------------------------------
# The real harness CLIs (Claude Code, Codex, opencode) at the versions pinned in infra/agent-clis.json, packed
# from the npm registry into the cache (no install scripts run); the real-agent tests drive them, and
# the agent images (next step) are built from them, so they are fetched first.
bash "$root/scripts/fetch-agent-clis.sh" || say "warning: could not fetch the agent CLIs; the real-agent tests will skip"
# aider is a Python package: its pinned wheels (images/agent-aider/requirements.lock), fetched by pip.
bash "$root/scripts/fetch-aider.sh" || say "warning: could not fetch the aider wheels; tarmac/agent-aider is not built"

# 5. Images ------------------------------------------------------------------------
if [ "${TARMAC_SKIP_IMAGES:-0}" != 1 ]; then
  bash "$root/scripts/build-images.sh"
fi

# 6. Chromium [tests] ---------------------------------------------------------------
# The browser tests (test/e2e/web-ui.test.ts, the dashboard's) drive Debian's chromium through
# playwright-core (no browser download).
if [ "$tests" = 1 ] && [ ! -x /usr/bin/chromium ] && [ -f /etc/debian_version ]; then
  say "installing chromium from apt (the Web UI browser test)"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2 \
    || { as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2; } \
    || say "warning: could not install chromium; the Web UI browser test will fail"
fi

# 7. Schemathesis [tests] ------------------------------------------------------------
# test/infra/openapi-fuzz.test.ts fuzzes the OpenAPI document through scripts/fuzz-api.sh,
# whose command line and config are written for this version (the v3 CLI differs).
schemathesis_version=4.32.5
schemathesis_venv="$cache/venv-schemathesis"
if [ "$tests" = 1 ] && [ "$("$schemathesis_venv/bin/schemathesis" --version 2>/dev/null)" != "schemathesis, version $schemathesis_version" ]; then
  say "installing schemathesis $schemathesis_version from PyPI into $schemathesis_venv (the OpenAPI fuzz test)"
  { python3 -m venv "$schemathesis_venv" >&2 && "$schemathesis_venv/bin/pip" install -q "schemathesis==$schemathesis_version" >&2; } \
    || say "warning: could not install schemathesis (needs python3 with venv, and PyPI); the OpenAPI fuzz test will fail"
fi

# 8. Workflow bundle ---------------------------------------------------------------
# Workers load dist/workflow-bundle.js instead of bundling at every start, while its key (a hash of
# workflows/, core/, policies/ and the installed dependencies) matches the sources; a stale one is never
# loaded (the worker bundles from source and logs why). See docs/VERSIONING.md.
node --import tsx "$root/scripts/build-workflows.ts" >&2 || die "could not build the workflow bundle; see the error above"
# The operator's dashboard (dashboard/ → dist/dashboard/, served by the API at /dashboard/); under a second.
node --import tsx "$root/scripts/build-dashboard.ts" >&2 || die "could not build the dashboard; see the error above"

# 10. Time-skipping test server [tests] ---------------------------------------------
# Hours-long waits are tested with time skipped (test/e2e/long-waits.test.ts); the SDK's own download of
# the test server cannot be reached here, so its JVM build comes from Maven Central, once.
if [ "$tests" = 1 ]; then
  bash "$root/scripts/fetch-test-server.sh" || say "warning: could not fetch the time-skipping test server; test/e2e/long-waits.test.ts will be skipped"
fi

# 9. A Temporal cluster on PostgreSQL (--cluster) ---------------------------------------
# test/cluster runs the Temporal server itself on PostgreSQL, with two worker hosts and the API, as
# separate processes. The version is the one of the compose file's temporalio/server image.
if [ "$cluster" = 1 ]; then
  postgres_bin() { { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; } || true; }
  if [ -z "$(postgres_bin)" ] && ! command -v initdb >/dev/null; then
    [ -f /etc/debian_version ] || die "PostgreSQL's initdb is not installed; install a PostgreSQL server (test/cluster needs one)"
    say "installing Debian's PostgreSQL server (apt; test/cluster)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2 \
      || { as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2; } \
      || die "apt-get install postgresql failed"
  fi
  say "PostgreSQL: $(postgres_bin || command -v initdb)"
  # PostgreSQL refuses to run as root: as root, the test runs it as this user (Debian's package makes it).
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    say "creating the system user postgres (PostgreSQL refuses to run as root)"
    useradd --system --user-group --home-dir /var/lib/postgresql --shell /usr/sbin/nologin postgres
  fi
  temporal_server_version=v1.29.1
  server_dir="$cache/temporal-server-$temporal_server_version"
  if [ ! -x "$server_dir/temporal-server" ] || [ ! -x "$server_dir/temporal-sql-tool" ] || [ ! -d "$server_dir/schema/postgresql/v12" ]; then
    command -v go >/dev/null || die "the Temporal server is not built and Go is not installed; install Go (test/cluster builds go.temporal.io/server $temporal_server_version)"
    say "building the Temporal server $temporal_server_version and its SQL tool from the Go module proxy (a few minutes, once)"
    build=$(mktemp -d "$cache/temporal-server.XXXXXX")
    chmod 755 "$build"
    CGO_ENABLED=0 GOBIN="$build" go install "go.temporal.io/server/cmd/server@$temporal_server_version" "go.temporal.io/server/cmd/tools/sql@$temporal_server_version" >&2 \
      || { rm -rf "$build"; die "could not build the Temporal server; see the go errors above"; }
    # The schema files ship in the module's source, which go install just downloaded.
    module_dir=$(go mod download -json "go.temporal.io/server@$temporal_server_version" | node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0, "utf8")).Dir)')
    mkdir -p "$build/schema"
    cp -R "$module_dir/schema/postgresql" "$build/schema/"
    chmod -R u+w "$build/schema"
    mv "$build/server" "$build/temporal-server"
    mv "$build/sql" "$build/temporal-sql-tool"
    rm -rf "$server_dir"
    mv "$build" "$server_dir"
  fi
  say "Temporal server: $server_dir/temporal-server ($("$server_dir/temporal-server" --version 2>/dev/null | awk '{print $NF}'))"
fi

say "ready"
