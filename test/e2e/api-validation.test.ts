import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { startStack, type Stack } from '../helpers/stack';

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
    { name: 'repo path that does not exist', body: () => ({ repo: '/nonexistent/tarmac/repo', branches: ['feature/ok'], target: 'main' }), field: 'repo', message: /does not exist/ },
    { name: 'repo that is not a git repository', body: () => ({ repo: '/tmp', branches: ['feature/ok'], target: 'main' }), field: 'repo', message: /git repository/ },
    { name: 'branch that does not exist', body: () => ({ repo: repoUrl, branches: ['feature/missing'], target: 'main' }), field: 'branches[0]', message: /does not exist/ },
    { name: 'target that does not exist', body: () => ({ repo: repoUrl, branches: ['feature/ok'], target: 'develop' }), field: 'target', message: /does not exist/ },
    { name: 'unknown field', body: () => ({ repo: repoUrl, branches: ['feature/ok'], target: 'main', force: true }), field: 'force' },
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
    const response = await stack.api('POST', '/v1/landings', { repo: repoUrl, branches: ['feature/ok'], target: 'main', agents: { fixer: 'claude-code#falbe-5' } });
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

  it('started no workflow for any of the bad requests', async () => {
    const started: string[] = [];
    for await (const execution of stack.client.workflow.list()) started.push(execution.workflowId);
    assert.deepEqual(started, []);
  });
});
