import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FixOutcome } from '../../core/fix-types';
import type { SessionOutcome } from '../../core/session-types';
import { createFixtureRepo, type Files } from '../../infra/fixture-repo';
import { startStack, waitFor, type Stack } from '../helpers/stack';
import { runResult } from '../helpers/runs';

/** Scenarios of agents working through the platform's tool gateway (MCP over a unix socket). */
describe('tool gateway scenarios', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  async function start(files: Files, body: Record<string, unknown>): Promise<{ id: string; repoPath: string }> {
    const repo = createFixtureRepo({ base: files });
    const created = await stack.api('POST', '/v1/fix-loops', { repo: repo.url, branch: 'main', ...body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return { id: created.body.id as string, repoPath: repo.path };
  }
  async function result(id: string): Promise<FixOutcome> {
    return (await runResult(stack, id, 'the fix loop')) as FixOutcome;
  }
  const telemetry = (id: string, sessionId = 'implementer-1') => {
    const path = join(stack.dataDir, 'runs', id, 'sessions', sessionId, 'gateway', 'telemetry.jsonl');
    return existsSync(path)
      ? readFileSync(path, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as Record<string, unknown>)
      : [];
  };
  const failingSuite = { Makefile: 'test:\n\tnode test.js\n', 'test.js': "console.error('expected 5, got 2'); process.exit(1);\n" };

  it('an agent working only through the gateway reads, edits the source, and the suite passes', async () => {
    stack.scriptScenario('fix-max', { edits: [{ file: 'src/max.js', find: 'a < b', replace: 'a > b' }] });
    const { id } = await start(
      {
        Makefile: 'test:\n\tnode test.js\n',
        'src/max.js': 'module.exports = (a, b) => (a < b ? a : b);\n',
        'test.js': "if (require('./src/max.js')(2, 5) !== 5) { console.error('max(2, 5) should be 5'); process.exit(1); }\n",
      },
      { request: 'the unit test for max fails', agents: { implementer: 'script#gateway-fixer:fix-max', ladder: ['script#gateway-fixer:fix-max'] } },
    );
    const outcome = await result(id);
    assert.equal(outcome.outcome, 'fixed', outcome.summary);
    assert.deepEqual(outcome.filesChanged, ['src/max.js']);
    const tools = telemetry(id).map((entry) => `${String(entry.tool)}${entry.refused ? '!' : ''}`);
    assert.deepEqual(tools.slice(0, 3), ['read_file', 'edit_file', 'run_command'], 'read before edit, commit through run_command');
    assert.equal(outcome.circuitBreakerTriggered, false);
  });

  it('re-running a failing command: exactly two runs, the third refused; the loop still ends with the breaker recorded', async () => {
    stack.scriptScenario('repeat-make-test', { command: 'make test' });
    const { id } = await start(failingSuite, {
      request: 'the tests fail',
      maxRepairs: 0,
      agents: { implementer: 'script#gateway-repeater:repeat-make-test', ladder: ['script#gateway-repeater:repeat-make-test'] },
    });
    const outcome = await result(id);
    assert.ok(['exhausted', 'thrashing'].includes(outcome.outcome), outcome.summary);
    assert.equal(outcome.circuitBreakerTriggered, true);
    assert.deepEqual(outcome.commandFailures, [{ command: 'make test', count: 2 }]);
    const runs = telemetry(id).filter((entry) => entry.tool === 'run_command');
    assert.equal(runs.filter((entry) => entry.exitCode !== undefined).length, 2, 'exactly two runs happened');
    assert.ok(
      runs.some((entry) => String(entry.refused).startsWith('circuit breaker')),
      'the third was refused by the gateway',
    );
  });

  it('running `npm run dev` before reading package.json is refused, naming the files to read first', async () => {
    const { id } = await start(
      { Makefile: 'up:\n\tnpm run dev\n', 'package.json': '{"scripts":{"dev":"node server.js"}}\n' },
      { request: 'the app does not start', maxRepairs: 0, agents: { implementer: 'script#gateway-eager-boot', ladder: ['script#gateway-eager-boot'] } },
    );
    await result(id);
    const session = (await stack.client.workflow.getHandle(`${id}.implementer-1`).result()) as SessionOutcome;
    const refusal = session.attempts[0]!.gateway!.refusals[0]!;
    assert.equal(refusal.tool, 'run_command');
    assert.match(refusal.reason, /read Makefile or package\.json or scripts\/start-all\.sh before running "npm run dev"/);
    assert.match(session.attempts[0]!.result!.summary, /grounding/, 'the agent received the refusal as a tool error');
  });

  it('SIGKILL the worker mid-loop: the loop completes and the breaker state survives the restart', async () => {
    // A 12 s pause before the third run: time to kill the worker between the second and the third.
    stack.scriptScenario('repeat-make-test-pausing', { command: 'make test', pauseMs: 12_000 });
    const { id } = await start(failingSuite, {
      request: 'the tests fail again',
      maxRepairs: 0,
      agents: { implementer: 'script#gateway-repeater:repeat-make-test-pausing', ladder: ['script#gateway-repeater:repeat-make-test-pausing'] },
    });
    await waitFor(
      async () => telemetry(id).filter((entry) => entry.tool === 'run_command').length,
      (count) => count === 2,
      120_000,
      'two runs through the gateway',
    );
    await stack.killWorker('SIGKILL');
    await stack.startWorker();
    const outcome = await result(id);
    assert.equal(outcome.circuitBreakerTriggered, true, 'the third run was refused after the restart: state not reset');
    const runs = telemetry(id).filter((entry) => entry.tool === 'run_command');
    assert.equal(runs.filter((entry) => entry.exitCode !== undefined).length, 2);
    assert.deepEqual(outcome.commandFailures, [{ command: 'make test', count: 2 }]);
  });
});
