import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readEvents } from '../helpers/sse';
import { fixLoop, runOnRef } from '../helpers/fix-loop';
import { startStack, testToken, type Stack } from '../helpers/stack';
import { fileAt } from '../helpers/git';

/** Fix-loop scenarios, each from a fresh fixture repo, judged by files on disk and the outcome metadata. */
describe('fix loop scenarios', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  it('a Makefile lacking `up` whose script exists → the playbook adds the target; `make up` exits 0', async () => {
    const { outcome, repoPath } = await fixLoop(
      stack,
      { Makefile: 'test:\n\ttrue\n', 'scripts/up.sh': 'echo services are up\n' },
      { request: 'the app does not start with make up' },
    );
    assert.equal(outcome.outcome, 'fixed', outcome.summary);
    assert.equal(outcome.playbookUsed, 'make-target-from-script');
    assert.equal(outcome.routedTo, 'implementer');
    assert.equal(outcome.reproCommand, 'make up');
    assert.equal(outcome.reproSource, 'request', 'the user wrote the command they ran ("with make up")');
    assert.equal(outcome.reproExitCode, 0);
    assert.deepEqual(outcome.filesChanged, ['Makefile']);
    assert.equal(outcome.sessions.length, 0, 'no agent was needed');
    assert.ok(outcome.fixBranch);
    assert.equal(runOnRef(repoPath, outcome.fixBranch, 'make up').status, 0, '`make up` exits 0 on the fix branch');
  });

  it('a fix loop has its own live events: GET /v1/runs/:id/events shows its phases, repro runs, log lines and outcome', async () => {
    const { outcome, id } = await fixLoop(
      stack,
      { Makefile: 'test:\n\ttrue\n', 'scripts/up.sh': 'echo services are up\n' },
      { request: 'the app does not start with make up' },
    );
    assert.equal(outcome.outcome, 'fixed', outcome.summary);
    const events = await readEvents(`${stack.apiUrl}/v1/runs/${id}/events`, testToken, { stop: (event) => event.event === 'end' });
    const of = (kind: string) => events.filter((event) => event.event === kind).map((event) => event.data);
    assert.deepEqual(
      of('phase').map((event) => event.phase),
      ['ground', 'discover', 'playbook', 'verify'],
    );
    assert.deepEqual(
      of('step').map((event) => `${event.name}:${event.status}`),
      ['ground#1:started', 'ground#1:done', 'repro#1:started', 'repro#1:failed', 'playbook:done', 'repro#2:started', 'repro#2:done'],
    );
    assert.match(
      of('step').find((event) => event.name === 'ground#1' && event.status === 'done').detail,
      /read Makefile; make database: 1 target\(s\) in Makefile/,
    );
    assert.ok(
      of('log').some((event) => /No rule to make target 'up'/.test(event.line)),
      'the failing repro’s output is on the stream',
    );
    assert.ok(
      of('log').some((event) => event.line === 'services are up'),
      'and the fixed one’s',
    );
    assert.deepEqual(
      of('outcome').map((event) => event.status),
      ['fixed'],
    );
    assert.equal(events.at(-1)!.data.outcome.outcome, 'fixed');
    // A run that keeps no journal says so instead of streaming nothing.
    const session = await stack.client.workflow.start('targetQueue', {
      workflowId: `queue-probe-${id}`,
      taskQueue: stack.config.taskQueue,
      args: [{ waiting: [], admitted: 0 }],
    });
    try {
      const none = await stack.api('GET', `/v1/runs/${session.workflowId}/events`);
      assert.equal(none.status, 404);
      assert.match(none.body.error.message, /has no event stream/);
    } finally {
      await session.terminate('probe done');
    }
  });

  it('`make check` calls `npm run typecheck`, which package.json lacks → fixed; the test files are untouched', async () => {
    const { outcome, repoPath, base } = await fixLoop(
      stack,
      {
        Makefile: 'check:\n\tnpm run typecheck\n\tnode test/app.test.js\n',
        'package.json': '{\n  "name": "fixture",\n  "private": true,\n  "scripts": { "test": "node test/app.test.js" }\n}\n',
        'scripts/typecheck.js': "require('./../src/app.js'); console.log('types ok');\n",
        'src/app.js': 'module.exports = (a, b) => a + b;\n',
        'test/app.test.js': "if (require('../src/app.js')(1, 2) !== 3) process.exit(1);\n",
      },
      { request: 'make check fails in the build', reproCommand: 'make check' },
    );
    assert.equal(outcome.outcome, 'fixed', outcome.summary);
    assert.equal(outcome.playbookUsed, 'npm-script-from-make');
    assert.deepEqual(outcome.filesChanged, ['package.json']);
    assert.equal(fileAt(repoPath, outcome.fixBranch!, 'test/app.test.js'), fileAt(repoPath, base, 'test/app.test.js'), 'the test file is untouched');
    assert.equal(runOnRef(repoPath, outcome.fixBranch!, 'make check').status, 0);
  });

  it('an inverted comparison is fixed in the source by an agent; the suite passes', async () => {
    stack.scriptScenario('fix-max', { edits: [{ file: 'src/max.js', find: 'a < b', replace: 'a > b' }] });
    const { outcome, repoPath, base } = await fixLoop(
      stack,
      {
        Makefile: 'test:\n\tnode test.js\n',
        'src/max.js': 'module.exports = (a, b) => (a < b ? a : b);\n',
        'test.js': "const max = require('./src/max.js');\nif (max(2, 5) !== 5) { console.error('max(2, 5) should be 5'); process.exit(1); }\n",
      },
      {
        request: 'the unit test for max fails',
        agents: { implementer: 'script#fixer:fix-max', ladder: ['script#fixer:fix-max'] },
      },
    );
    assert.equal(outcome.outcome, 'fixed', outcome.summary);
    assert.equal(outcome.playbookUsed, null);
    assert.deepEqual(outcome.filesChanged, ['src/max.js'], 'only the source changed; an edit to the test would be a failure');
    assert.equal(fileAt(repoPath, outcome.fixBranch!, 'test.js'), fileAt(repoPath, base, 'test.js'));
    assert.equal(outcome.reproExitCode, 0);
    assert.equal(runOnRef(repoPath, outcome.fixBranch!, 'make test').status, 0);
  });

  it('an agent whose rounds change nothing on disk ends the loop as thrashing, with an outcome', async () => {
    const { outcome } = await fixLoop(
      stack,
      { Makefile: 'test:\n\tnode -e "process.exit(3)"\n' },
      { request: 'the tests fail', agents: { implementer: 'script#claims-success', ladder: ['script#claims-success'] }, maxRepairs: 3 },
    );
    assert.equal(outcome.outcome, 'thrashing', outcome.summary);
    assert.equal(outcome.failureType, 'thrashing');
    assert.equal(outcome.reproExitCode, 2, 'make reports a failed recipe with exit 2');
    assert.equal(outcome.fixBranch, null, 'no fixes, no branch');
  });

  it('a design question is routed to an architect and answered, without a repro', async () => {
    const { outcome } = await fixLoop(
      stack,
      { 'README.md': '# x\n' },
      { request: 'should we split the API into two services?', agents: { architect: 'script#reviewer', ladder: ['script#reviewer'] } },
    );
    assert.equal(outcome.routedTo, 'architect');
    assert.equal(outcome.intent, 'design-question');
    assert.equal(outcome.outcome, 'answered', outcome.summary);
    assert.equal(outcome.reproExitCode, null);
  });
});
