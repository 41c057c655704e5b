import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { readEvents } from '../helpers/sse';
import { fixLoop, runOnRef } from '../helpers/fix-loop';
import { startStack, testToken, type Stack } from '../helpers/stack';
import { fileAt } from '../helpers/git';

/**
 * Grounded fix loops on small repositories this file builds (names and layouts are the test's own;
 * the playbooks know kinds of mistakes, not these repositories): the repro comes from the user's
 * words or from what the repository defines, and playbooks alone repair each with the smallest edit.
 */
describe('grounded fix loops: repro from the request or the repository, repaired by playbooks alone', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  /** The fix branch's change, line by line: file → lines removed and added (`git diff -U0`). */
  function lineDiff(repoPath: string, base: string, branch: string): Record<string, { removed: string[]; added: string[] }> {
    const diff = execFileSync('git', ['-C', repoPath, 'diff', '--no-color', '--unified=0', base, branch], { encoding: 'utf8' });
    const files: Record<string, { removed: string[]; added: string[] }> = {};
    let current: { removed: string[]; added: string[] } | undefined;
    for (const line of diff.split('\n')) {
      if (line.startsWith('+++ b/')) current = files[line.slice(6)] = { removed: [], added: [] };
      else if (line.startsWith('--- ') || line.startsWith('+++ ')) continue;
      else if (line.startsWith('-')) current!.removed.push(line.slice(1));
      else if (line.startsWith('+')) current!.added.push(line.slice(1));
    }
    return files;
  }

  it("a make target defined in an included makefile under a near-miss name: `make start-all` from the user's words → an alias next to start_all in mk/run.mk", async () => {
    const { outcome, repoPath, base } = await fixLoop(
      stack,
      {
        Makefile: 'include mk/run.mk\n\n.PHONY: build\nbuild:\n\t@echo built\n',
        'mk/run.mk': '# services\n.PHONY: start_all stop\nstart_all: build\n\t@echo all services started\n\nstop:\n\t@echo stopped\n',
      },
      { request: "make start-all fails: No rule to make target 'start-all'" },
    );
    assert.equal(outcome.outcome, 'fixed', outcome.summary);
    assert.equal(outcome.reproCommand, 'make start-all');
    assert.equal(outcome.reproSource, 'request');
    assert.match(outcome.reproReason, /pastes make's error "No rule to make target 'start-all'"/);
    assert.deepEqual(outcome.groundingFiles, ['Makefile', 'mk/run.mk'], 'make read the included makefile too');
    assert.equal(outcome.playbookUsed, 'make-target-alias');
    assert.equal(outcome.sessions.length, 0, 'no agent session');
    assert.equal(outcome.meters.agentSessions, 0);
    assert.deepEqual(outcome.filesChanged, ['mk/run.mk'], 'the alias sits in the file that defines the real target');
    const change = lineDiff(repoPath, base, outcome.fixBranch!);
    assert.deepEqual(Object.keys(change), ['mk/run.mk']);
    assert.deepEqual([change['mk/run.mk']!.removed, change['mk/run.mk']!.added.length], [[], 3], 'three lines added, none removed');
    assert.equal(
      fileAt(repoPath, outcome.fixBranch!, 'mk/run.mk'),
      '# services\n.PHONY: start_all stop\nstart_all: build\n\t@echo all services started\n\n.PHONY: start-all\nstart-all: start_all\n\nstop:\n\t@echo stopped\n',
      'the alias right after the real target',
    );
    const run = runOnRef(repoPath, outcome.fixBranch!, 'make start-all');
    assert.equal(run.status, 0, run.output);
    assert.match(run.output, /all services started/);
  });

  it('an npm project (no makefile) whose entry point requires a near-miss path: "the app will not start" → `npm start` from package.json → the one-line import fix', async () => {
    const { outcome, repoPath, base } = await fixLoop(
      stack,
      {
        'package.json':
          '{\n  "name": "greeter-app",\n  "private": true,\n  "scripts": {\n    "start": "node src/index.js",\n    "lint": "node -e \\"process.exit(0)\\""\n  }\n}\n',
        'src/index.js': "const { greet } = require('./lib/greetings');\n\nconsole.log(greet('world'));\n",
        'src/lib/greeting.js': 'exports.greet = (name) => `hello, ${name}`;\n',
      },
      { request: 'the app will not start' },
    );
    assert.equal(outcome.outcome, 'fixed', outcome.summary);
    assert.equal(outcome.reproCommand, 'npm start');
    assert.equal(outcome.reproSource, 'repository');
    assert.match(outcome.reproReason, /package\.json defines scripts\.start \(`node src\/index\.js`\)/);
    assert.deepEqual(outcome.groundingFiles, ['package.json']);
    assert.equal(outcome.playbookUsed, 'require-path-near-miss');
    assert.equal(outcome.sessions.length, 0, 'no agent session');
    assert.equal(outcome.meters.containersRun, 2, 'no makefile, so no make container: the repro and its verify');
    assert.deepEqual(lineDiff(repoPath, base, outcome.fixBranch!), {
      'src/index.js': { removed: ["const { greet } = require('./lib/greetings');"], added: ["const { greet } = require('./lib/greeting');"] },
    });
    const run = runOnRef(repoPath, outcome.fixBranch!, 'npm start');
    assert.equal(run.status, 0, run.output);
    assert.match(run.output, /hello, world/);
  });

  it('a missing npm script with a near miss: `npm run serve_api` from the pasted error → one alias line in package.json', async () => {
    const { outcome, repoPath, base } = await fixLoop(
      stack,
      {
        'package.json':
          '{\n  "name": "api",\n  "private": true,\n  "scripts": {\n    "serve-api": "node server.js",\n    "test": "node -e \\"process.exit(0)\\""\n  }\n}\n',
        'server.js': "console.log('api ready (dry run)');\n",
      },
      { request: 'npm run serve_api fails with: npm error Missing script: "serve_api"' },
    );
    assert.equal(outcome.outcome, 'fixed', outcome.summary);
    assert.equal(outcome.reproCommand, 'npm run serve_api');
    assert.equal(outcome.reproSource, 'request');
    assert.match(outcome.reproReason, /pastes npm's error "Missing script: serve_api"/);
    assert.deepEqual(outcome.groundingFiles, ['package.json']);
    assert.equal(outcome.playbookUsed, 'npm-script-alias');
    assert.equal(outcome.sessions.length, 0, 'no agent session');
    assert.deepEqual(lineDiff(repoPath, base, outcome.fixBranch!), { 'package.json': { removed: [], added: ['    "serve_api": "npm run serve-api",'] } });
    const run = runOnRef(repoPath, outcome.fixBranch!, 'npm run serve_api');
    assert.equal(run.status, 0, run.output);
    assert.match(run.output, /api ready/);
  });

  it('no grounded repro: the request names no command ("make sure" is none) and the repository defines nothing to start → no-repro, nothing run, no command invented', async () => {
    const { outcome, id } = await fixLoop(
      stack,
      { Makefile: 'lint:\n\t@echo linted\n', 'src/server.js': "console.log('up');\n" },
      { request: 'please make sure the server starts' },
    );
    assert.equal(outcome.outcome, 'no-repro', outcome.summary);
    assert.equal(outcome.failureType, 'no-grounded-repro');
    assert.equal(outcome.reproCommand, '');
    assert.equal(outcome.reproSource, null);
    assert.equal(outcome.reproExitCode, null);
    assert.match(outcome.summary, /no grounded repro/);
    assert.match(outcome.reproReason, /looked for start, dev, serve, up, run, start-all\); read Makefile — targets: lint; no package\.json/);
    assert.match(outcome.reproReason, /not taken from the request: `make sure`/);
    assert.deepEqual(outcome.groundingFiles, ['Makefile']);
    assert.equal(outcome.meters.containersRun, 1, "only make's database was read; no repro ran");
    assert.equal(outcome.sessions.length, 0);
    assert.equal(outcome.fixBranch, null);
    const events = await readEvents(`${stack.apiUrl}/v1/runs/${id}/events`, testToken, { stop: (event) => event.event === 'end' });
    assert.deepEqual(
      events.filter((event) => event.event === 'phase').map((event) => event.data.phase),
      ['ground'],
    );
    assert.equal(
      events.some((event) => event.event === 'step' && String(event.data.name).startsWith('repro')),
      false,
      'no repro step',
    );
  });

  it('the same command failing the same way twice → back to the playbooks, none applies → command-thrashing, without another identical agent round', async () => {
    // The agent commits a change that has nothing to do with the failure: the repro fails exactly as before.
    stack.scriptScenario('touch-notes', { edits: [{ file: 'notes.md', replace: 'notes, edited\n' }] });
    const { outcome, id } = await fixLoop(
      stack,
      { Makefile: 'test:\n\tnode test.js\n', 'test.js': "console.error('expected 5, got 2'); process.exit(1);\n", 'notes.md': 'notes\n' },
      { request: 'the tests fail', maxRepairs: 3, agents: { implementer: 'script#fixer:touch-notes', ladder: ['script#fixer:touch-notes'] } },
    );
    assert.equal(outcome.outcome, 'thrashing', outcome.summary);
    assert.equal(outcome.failureType, 'command-thrashing');
    assert.match(outcome.summary, /`make test` failed the same way 2 times \(exit 2\), and no playbook applies/);
    assert.equal(outcome.reproSource, 'repository');
    assert.equal(outcome.sessions.length, 1, 'one agent round, not four');
    assert.equal(outcome.repairAttempts, 0);
    const events = await readEvents(`${stack.apiUrl}/v1/runs/${id}/events`, testToken, { stop: (event) => event.event === 'end' });
    assert.deepEqual(
      events.filter((event) => event.event === 'phase').map((event) => event.data.phase),
      ['ground', 'discover', 'playbook', 'edit', 'verify', 'playbook'],
      'after the repeated failure the loop went back to the playbooks',
    );
  });
});
