import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import { listEnvironments } from '../../activities/environments/environments';
import { canonicalRepo } from '../target-filter';
import { EnvironmentListQuery, EnvironmentSchema, ErrorSchema } from '../schemas';

type Listed = Awaited<ReturnType<typeof listEnvironments>>[number];

/**
 * What the API tells of an environment: its record without the host's internals (the base image's
 * ID, the builder's host, connection addresses) and with the names of the declaration's variables,
 * never their values (a declaration's env may hold a registry token).
 */
function environmentView(entry: Listed): Static<typeof EnvironmentSchema> {
  const { declaration } = entry;
  return {
    key: entry.key,
    repo: entry.repo,
    baseImage: entry.baseImage,
    sizeBytes: entry.sizeBytes,
    builtAt: entry.builtAt,
    lastUsedAt: entry.lastUsedAt,
    buildMs: entry.buildMs,
    usedBy: [...entry.usedBy].sort(),
    builtBy: { runId: entry.builtBy.runId },
    inputs: entry.inputs.map((input) => ('absent' in input ? { path: input.path, absent: true as const } : { path: input.path, oid: input.oid })),
    products: [...entry.products],
    egress: entry.egress.map(({ host, port, allowed, bytesUp, bytesDown, reason }) => ({
      host,
      port,
      allowed,
      bytesUp,
      bytesDown,
      ...(reason ? { reason } : {}),
    })),
    declaration: {
      source: declaration.source,
      file: declaration.file,
      ...(declaration.image ? { image: declaration.image } : {}),
      ...(declaration.dockerfile ? { dockerfile: { path: declaration.dockerfile.path, context: declaration.dockerfile.context } } : {}),
      setup: [...declaration.setup],
      inputs: [...declaration.inputs],
      ...(declaration.egress ? { egress: [...declaration.egress] } : {}),
      envNames: Object.keys(declaration.env).sort(),
    },
  };
}

// 431: a request line or headers larger than the server accepts (a long repo in the query).
const errors = { 400: ErrorSchema, 401: ErrorSchema, 431: ErrorSchema, 500: ErrorSchema };

/**
 * The environments this API's host keeps (activities/environments/environments.ts), read from its data dir: the
 * workers of the same host build and use them. A worker on another host has its own, not listed here.
 */
export const environmentRoutes: FastifyPluginAsyncTypebox<{ dataDir: string }> = async (app, { dataDir }) => {
  app.get(
    '/environments',
    {
      schema: {
        summary:
          "The repositories' environments cached on this host (built by its workers), most recently used first: key, size, inputs, egress, which runs hold them",
        querystring: EnvironmentListQuery,
        response: { 200: Type.Object({ environments: Type.Array(EnvironmentSchema) }), ...errors },
      },
    },
    async function listCachedEnvironments(request) {
      const repo = request.query.repo === undefined ? undefined : canonicalRepo(request.query.repo);
      const environments = (await listEnvironments(dataDir))
        .filter((entry) => repo === undefined || entry.repo === repo)
        .sort((a, b) => b.lastUsedAt.localeCompare(a.lastUsedAt) || a.key.localeCompare(b.key));
      return { environments: environments.map(environmentView) };
    },
  );
};
