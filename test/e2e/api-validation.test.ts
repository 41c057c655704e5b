import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { agentRegistryId } from '../../workflows/agent-registry';
import { createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { startStack, testToken, type Stack } from '../helpers/stack';

describe('API input validation: 400 naming the field, nothing started', () => {
  let stack: Stack;
  let repoUrl: string;
  before(async () => {
    stack = await startStack();
    repoUrl = createFixtureRepo({
      base: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['true'] }]) },
      branches: [{ name: 'feature/ok', commits: [{ message: 'ok', files: { 'a.txt': 'a\n' } }] }],
    }).url;
  });
  after(async () => {
    await stack?.stop();
  });

  const cases: { name: string; body: () => unknown; field: string; message?: RegExp }[] = [
    { name: 'missing repo', body: () => ({ branches: ['feature/ok'], target: 'main' }), field: 'repo', message: /required/ },
    { name: 'missing branches', body: () => ({ repo: repoUrl, target: 'main' }), field: 'branches', message: /required/ },
    { name: 'missing target', body: () => ({ repo: repoUrl, branches: ['feature/ok'] }), field: 'target', message: /required/ },
    { name: 'empty branches', body: () => ({ repo: repoUrl, branches: [], target: 'main' }), field: 'branches' },
    { name: 'branch ../x', body: () => ({ repo: repoUrl, branches: ['../x'], target: 'main' }), field: 'branches[0]', message: /\.\./ },
    { name: 'branch -x', body: () => ({ repo: repoUrl, branches: ['-x'], target: 'main' }), field: 'branches[0]', message: /-/ },
    { name: 'branch a..b', body: () => ({ repo: repoUrl, branches: ['feature/ok', 'a..b'], target: 'main' }), field: 'branches[1]' },
    { name: 'target with a space', body: () => ({ repo: repoUrl, branches: ['feature/ok'], target: 'ma in' }), field: 'target' },
    {
      name: 'repo path that does not exist',
      body: () => ({ repo: join(tmpdir(), 'tarmac-nonexistent', 'repo'), branches: ['feature/ok'], target: 'main' }),
      field: 'repo',
      message: /does not exist/,
    },
    {
      name: 'repo that is not a git repository',
      body: () => ({ repo: '/tmp', branches: ['feature/ok'], target: 'main' }),
      field: 'repo',
      message: /git repository/,
    },
    {
      name: 'branch that does not exist',
      body: () => ({ repo: repoUrl, branches: ['feature/missing'], target: 'main' }),
      field: 'branches[0]',
      message: /does not exist/,
    },
    {
      name: 'target that does not exist',
      body: () => ({ repo: repoUrl, branches: ['feature/ok'], target: 'develop' }),
      field: 'target',
      message: /does not exist/,
    },
    { name: 'unknown field', body: () => ({ repo: repoUrl, branches: ['feature/ok'], target: 'main', force: true }), field: 'force' },
    // Scripted behaviour is a scenario of the worker's (script#fixer:<scenario>), never part of a request.
    {
      name: 'a script switch in the agents',
      body: () => ({
        repo: repoUrl,
        branches: ['feature/ok'],
        target: 'main',
        agents: { fixer: 'script#fixer', scriptEdits: [{ file: 'FIXED', replace: 'yes\n' }] },
      }),
      field: 'agents.scriptEdits',
      message: /is not a known field/,
    },
    { name: 'branch equal to target', body: () => ({ repo: repoUrl, branches: ['main'], target: 'main' }), field: 'branches[0]' },
    { name: 'wrong type', body: () => ({ repo: repoUrl, branches: 'feature/ok', target: 'main' }), field: 'branches' },
  ];

  for (const { name, body, field, message } of cases) {
    it(name, async () => {
      const response = await stack.api('POST', '/v1/landings', body());
      assert.equal(response.status, 400, JSON.stringify(response.body));
      assert.equal(response.body.error.code, 'TARMAC_VALIDATION');
      assert.equal(response.body.error.details.field, field);
      assert.ok(response.body.error.message.startsWith(field), response.body.error.message);
      if (message) assert.match(response.body.error.message, message);
    });
  }

  it('an unknown harness#model in the agents is a 400 TARMAC_UNKNOWN_MODEL naming the field and the nearest names', async () => {
    const response = await stack.api('POST', '/v1/landings', {
      repo: repoUrl,
      branches: ['feature/ok'],
      target: 'main',
      agents: { fixer: 'claude-code#falbe-5' },
    });
    assert.equal(response.status, 400);
    assert.equal(response.body.error.code, 'TARMAC_UNKNOWN_MODEL');
    assert.equal(response.body.error.details.field, 'agents.fixer');
    assert.match(response.body.error.message, /nearest known: claude-code#claude-/);
  });

  it('rejects a missing or wrong bearer token with 401 and the same message', async () => {
    const body = { repo: repoUrl, branches: ['feature/ok'], target: 'main' };
    const none = await stack.api('POST', '/v1/landings', body, null);
    const wrong = await stack.api('POST', '/v1/landings', body, 'wrong-token-0123456789abcdef');
    assert.equal(none.status, 401);
    assert.equal(wrong.status, 401);
    assert.equal(none.body.error.code, 'TARMAC_UNAUTHORIZED');
    assert.deepEqual(none.body, wrong.body, 'the answer does not say which part was wrong');
  });

  it('answers 404 with the error shape for an unknown landing', async () => {
    const response = await stack.api('GET', '/v1/landings/land.none.main.000000000000');
    assert.equal(response.status, 404);
    assert.equal(response.body.error.code, 'TARMAC_NOT_FOUND');
  });

  // Regressions found by the OpenAPI fuzz run (test/infra/openapi-fuzz.test.ts).
  it('takes path parameters up to their schema length, and answers longer ones with a 400 in the error shape', async () => {
    // Fastify's router stopped at 100 characters with a bare 414, below the ids' 200.
    const long = await stack.api('GET', `/v1/runs/${'x'.repeat(150)}`);
    assert.equal(long.status, 404, JSON.stringify(long.body));
    assert.equal(long.body.error.code, 'TARMAC_NOT_FOUND');
    for (const length of [201, 300]) {
      const tooLong = await stack.api('GET', `/v1/runs/${'x'.repeat(length)}`);
      assert.equal(tooLong.status, 400, `${length}: ${JSON.stringify(tooLong.body)}`);
      assert.equal(tooLong.body.error.code, 'TARMAC_VALIDATION');
    }
  });

  it('answers a method a known path does not serve with 405 and Allow, an unknown path with 404', async () => {
    for (const method of ['TRACE', 'QUERY'] as const) {
      const response = await stack.app.inject({ method: method as 'GET', url: '/v1/landings', headers: { authorization: `Bearer ${testToken}` } });
      assert.equal(response.statusCode, 405, `${method}: ${response.body}`);
      assert.equal(response.json().error.code, 'TARMAC_METHOD_NOT_ALLOWED');
      assert.deepEqual(
        String(response.headers.allow)
          .split(', ')
          .filter((allowed) => allowed !== 'HEAD'),
        ['GET', 'POST'],
      );
    }
    const unknown = await stack.app.inject({ method: 'TRACE', url: '/v1/nothing-here' });
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().error.code, 'TARMAC_NOT_FOUND');
  });

  it('refuses a NUL byte in a repo with 400 naming the field (it was a 500)', async () => {
    const created = await stack.api('POST', '/v1/landings', { repo: 'a\u0000b', branches: ['feature/ok'], target: 'main' });
    assert.equal(created.status, 400, JSON.stringify(created.body));
    assert.equal(created.body.error.details.field, 'repo');
    const listed = await stack.api('GET', '/v1/landings?repo=%00');
    assert.equal(listed.status, 400, JSON.stringify(listed.body));
    assert.equal(listed.body.error.details.field, 'repo');
  });

  it('answers a request head over 16 KiB with 431 in the error shape', async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>((done, fail) => {
      const request = httpRequest(
        `${stack.apiUrl}/v1/landings`,
        { headers: { authorization: `Bearer ${testToken}`, 'x-padding': 'x'.repeat(20_000) } },
        (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () => done({ status: response.statusCode ?? 0, body: text }));
        },
      );
      request.once('error', fail);
      request.end();
    });
    assert.equal(status, 431);
    assert.equal(JSON.parse(body).error.code, 'TARMAC_VALIDATION');
  });

  it('started no workflow for any of the bad requests', async () => {
    const started: string[] = [];
    for await (const execution of stack.client.workflow.list()) started.push(execution.workflowId);
    // The agent registry is the worker's (it reports what it can run at start), not a request's.
    assert.deepEqual(
      started.filter((id) => id !== agentRegistryId),
      [],
    );
  });
});
