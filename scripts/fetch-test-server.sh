#!/usr/bin/env bash
# The Temporal time-skipping test server for test/e2e/long-waits.test.ts, on the JVM: the SDK would
# download a native build from temporal.download, which this workplace cannot reach; the same server
# is published on Maven Central as io.temporal:temporal-test-server (a jar and its dependencies).
# Idempotent: fetched once into $TARMAC_CACHE_DIR/temporal-test-server-<version>/ with a launcher
# `temporal-test-server <port>` that @temporalio/testing starts as an existing executable.
set -euo pipefail
version=1.31.0
cache=${TARMAC_CACHE_DIR:-$HOME/.cache/tarmac}
dir="$cache/temporal-test-server-$version"
launcher="$dir/temporal-test-server"
say() { printf '[setup] %s\n' "$*" >&2; }
[ -x "$launcher" ] && [ -f "$dir/lib/temporal-test-server-$version.jar" ] && { say "temporal test server: $launcher"; exit 0; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  [ -f /etc/debian_version ] || { say "java and mvn are needed for the time-skipping test server; skipped"; exit 0; }
  say "installing a JRE and maven from apt (the time-skipping test server runs on the JVM)"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless maven >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>tarmac</groupId><artifactId>temporal-test-server</artifactId><version>1</version>
  <dependencies><dependency><groupId>io.temporal</groupId><artifactId>temporal-test-server</artifactId><version>$version</version></dependency></dependencies>
</project>
POM
say "fetching io.temporal:temporal-test-server:$version from Maven Central (once)"
mkdir -p "$dir"
(cd "$work" && mvn -q -B dependency:copy-dependencies -DoutputDirectory="$dir/lib" >&2)
cat >"$launcher" <<LAUNCHER
#!/bin/sh
# Temporal's time-skipping test server $version (io.temporal.testserver.TestServer <port>).
exec java -cp "$dir/lib/*" io.temporal.testserver.TestServer "\$@"
LAUNCHER
chmod +x "$launcher"
say "temporal test server: $launcher"
