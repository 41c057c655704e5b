import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import { quarantinesInForce } from '../../activities/stores/quarantine';
import { suiteQuarantineId } from '../../core/node/quarantine-id';
import { liftQuarantineUpdate, type Quarantine } from '../../core/quarantine';
import { searchAttributes } from '../../core/search-attributes';
import { runListQuery } from '../../core/visibility-query';
import { ApiError, NotFound } from '../errors';
import { canonicalRepo, checkedTarget } from '../target-filter';
import { ErrorSchema, QuarantineLiftedSchema, QuarantineSchema } from '../schemas';

const QuarantineListQuery = Type.Object(
  {
    repo: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'Repository as given to POST /v1/landings (path or git URL)' })),
    target: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  },
  { additionalProperties: false },
);

const QuarantineLiftQuery = Type.Object(
  {
    repo: Type.String({ minLength: 1, maxLength: 4096, description: 'Repository as given to POST /v1/landings (path or git URL)' }),
    target: Type.String({ minLength: 1, maxLength: 255 }),
  },
  { additionalProperties: false },
);

const SuiteParams = Type.Object({
  suiteId: Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9][a-z0-9_-]{0,62}$', description: 'the suite id of the gate file' }),
});

// 431: a request line or headers larger than the server accepts (a long repo in the query or path).
const errors = { 400: ErrorSchema, 401: ErrorSchema, 431: ErrorSchema, 500: ErrorSchema };

const view = (repo: string, target: string, entry: Quarantine) => ({
  repo,
  target,
  ...entry,
  logRefs: [...entry.logRefs],
  links: { landing: `/v1/landings/${entry.landingId}` },
});

/**
 * Suite quarantines (workflows/suite-quarantine.ts): the suites whose red blocks no landing on a
 * target until they expire (or are lifted here), each with the evidence that put it there. Read from
 * the target's entity workflow, so any API instance answers for every host.
 */
export const quarantineRoutes: FastifyPluginAsyncTypebox<{ client: Client }> = async (app, { client }) => {
  app.get(
    '/quarantines',
    {
      schema: {
        summary: 'Suites quarantined now (red, settled flaky or pre-existing by evidence; they block no landing until they expire), by repo and target',
        querystring: QuarantineListQuery,
        response: { 200: Type.Object({ quarantines: Type.Array(QuarantineSchema) }), ...errors },
      },
    },
    async function listQuarantines(request) {
      const repo = request.query.repo === undefined ? undefined : canonicalRepo(request.query.repo);
      const target = request.query.target === undefined ? undefined : checkedTarget(request.query.target);
      // One target: its entity, asked directly. Otherwise every running entity the filter matches (visibility).
      const pairs: { repo: string; target: string }[] = [];
      if (repo !== undefined && target !== undefined) pairs.push({ repo, target });
      else {
        const query = runListQuery({
          kind: 'suite-quarantine',
          status: 'Running',
          ...(repo === undefined ? {} : { repo }),
          ...(target === undefined ? {} : { target }),
        });
        for await (const execution of client.workflow.list({ query })) {
          const attributes = execution.typedSearchAttributes;
          const found = { repo: attributes.get(searchAttributes.repo), target: attributes.get(searchAttributes.target) };
          if (found.repo && found.target) pairs.push({ repo: found.repo, target: found.target });
        }
      }
      const quarantines = [];
      for (const pair of pairs) {
        for (const entry of await quarantinesInForce(client, pair.repo, pair.target)) quarantines.push(view(pair.repo, pair.target, entry));
      }
      return { quarantines };
    },
  );

  app.delete(
    '/quarantines/:suiteId',
    {
      schema: {
        summary: "Lift a suite's quarantine on a target before it expires: its red blocks landings again",
        params: SuiteParams,
        querystring: QuarantineLiftQuery,
        response: { 200: QuarantineLiftedSchema, 404: ErrorSchema, ...errors },
      },
    },
    async function liftQuarantine(request) {
      const repo = canonicalRepo(request.query.repo);
      const target = checkedTarget(request.query.target);
      const { suiteId } = request.params;
      const notQuarantined = () => new NotFound(`suite ${suiteId} is not quarantined on ${target} of ${repo}`);
      if (!(await quarantinesInForce(client, repo, target)).some((entry) => entry.suiteId === suiteId)) throw notQuarantined();
      try {
        const { lifted } = await client.workflow.getHandle(suiteQuarantineId(repo, target)).executeUpdate(liftQuarantineUpdate, { args: [{ suiteId }] });
        if (!lifted) throw notQuarantined();
      } catch (error) {
        if (error instanceof ApiError) throw error;
        // Ended by itself between the two calls (its last quarantine expired): nothing to lift.
        if (error instanceof WorkflowNotFoundError || !(await quarantinesInForce(client, repo, target)).some((entry) => entry.suiteId === suiteId))
          throw notQuarantined();
        throw error;
      }
      return { lifted: true as const, repo, target, suiteId };
    },
  );
};
