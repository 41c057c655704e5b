#!/bin/sh
# Tarmac's namespace and its Tarmac* search attributes on a running Temporal cluster, with the
# temporal CLI. Idempotent: run it after every upgrade (a namespace or attribute that exists is kept).
# The compose file runs it in the temporalio/admin-tools image; test/cluster runs it with the CLI
# that setup caches. The attributes are core/search-attributes.ts's (test/infra/compose.test.ts checks).
#   TEMPORAL_ADDRESS             the frontend, host:port (default 127.0.0.1:7233)
#   TEMPORAL_NAMESPACE           Tarmac's namespace, TARMAC_TEMPORAL_NAMESPACE of the API and workers (default: default)
#   TEMPORAL_NAMESPACE_RETENTION how long finished runs' histories are kept (default 168h)
#   TEMPORAL_CLI                 the temporal CLI (default: temporal)
#   TEMPORAL_WAIT_SECONDS        how long to wait for the cluster to answer (default 120)
set -eu
cli=${TEMPORAL_CLI:-temporal}
namespace=${TEMPORAL_NAMESPACE:-default}
export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-127.0.0.1:7233}"
unset TEMPORAL_NAMESPACE # the CLI would read it as the default of every command; each names its own

waited=0
until "$cli" operator cluster health >/dev/null 2>&1; do
  if [ "$waited" -ge "${TEMPORAL_WAIT_SECONDS:-120}" ]; then
    echo "setup-namespace: the Temporal cluster at $TEMPORAL_ADDRESS did not answer within $waited s" >&2
    exit 1
  fi
  sleep 2
  waited=$((waited + 2))
done

if "$cli" operator namespace describe --namespace "$namespace" >/dev/null 2>&1; then
  echo "setup-namespace: namespace $namespace exists"
else
  "$cli" operator namespace create --namespace "$namespace" --retention "${TEMPORAL_NAMESPACE_RETENTION:-168h}"
  echo "setup-namespace: namespace $namespace created"
fi

# A new namespace reaches every service of the cluster within its namespace refresh (seconds).
waited=0
until "$cli" operator search-attribute list --namespace "$namespace" >/dev/null 2>&1; do
  if [ "$waited" -ge "${TEMPORAL_WAIT_SECONDS:-120}" ]; then
    echo "setup-namespace: namespace $namespace was not served within $waited s" >&2
    exit 1
  fi
  sleep 1
  waited=$((waited + 1))
done
# Creating an attribute that exists with the same type succeeds; with another type it fails (and so does this script).
for attribute in TarmacKind=Keyword TarmacRepo=Keyword TarmacTarget=Keyword TarmacBranch=KeywordList TarmacPhase=Keyword TarmacOutcome=Keyword; do
  "$cli" operator search-attribute create --namespace "$namespace" --name "${attribute%%=*}" --type "${attribute#*=}" >/dev/null
done
# Usable once the frontend's namespace view has them (a query naming them is refused until then).
waited=0
until "$cli" workflow list --namespace "$namespace" --limit 1 --query 'TarmacKind = "probe" AND TarmacBranch = "probe"' >/dev/null 2>&1; do
  if [ "$waited" -ge "${TEMPORAL_WAIT_SECONDS:-120}" ]; then
    echo "setup-namespace: the search attributes of $namespace were not served within $waited s" >&2
    exit 1
  fi
  sleep 1
  waited=$((waited + 1))
done
echo "setup-namespace: search attributes of $namespace:"
"$cli" operator search-attribute list --namespace "$namespace" | grep Tarmac
