#!/bin/sh
# The Temporal server's two PostgreSQL databases (persistence and visibility), created if missing and
# brought to the schema version of the tool's release. Idempotent: run it before every server start
# and after every server upgrade (with the new release's tool and schema files).
# The compose file runs it in the temporalio/admin-tools image (the tool and the schema files are there);
# test/cluster runs it with the tool and schema files setup caches (scripts/setup.sh --cluster).
#   SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD   the PostgreSQL server and the role Temporal uses
#                                                (it needs CREATEDB, or the databases made beforehand)
#   TEMPORAL_DB, TEMPORAL_VISIBILITY_DB          the databases (default temporal, temporal_visibility)
#   TEMPORAL_SQL_TOOL                            default temporal-sql-tool
#   TEMPORAL_SCHEMA_DIR                          default /etc/temporal/schema/postgresql/v12
set -eu
tool=${TEMPORAL_SQL_TOOL:-temporal-sql-tool}
schema=${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}
export SQL_PLUGIN=postgres12
: "${SQL_HOST:?name the PostgreSQL host}" "${SQL_USER:?name the PostgreSQL role}"
export SQL_PORT="${SQL_PORT:-5432}"

for pair in "${TEMPORAL_DB:-temporal}:temporal" "${TEMPORAL_VISIBILITY_DB:-temporal_visibility}:visibility"; do
  database=${pair%%:*}
  versions="$schema/${pair#*:}/versioned"
  [ -d "$versions" ] || { echo "setup-schema: no schema files at $versions (TEMPORAL_SCHEMA_DIR)" >&2; exit 1; }
  # Each step is a no-op when already done: an existing database, a versioned schema, the current version.
  "$tool" --database "$database" create-database
  "$tool" --database "$database" setup-schema --version 0.0
  "$tool" --database "$database" update-schema --schema-dir "$versions"
  echo "setup-schema: database $database is ready"
done
