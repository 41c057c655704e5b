import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FixOutcome } from '../../core/fix-types';
import { createFixtureRepo, gateFile, type Files } from '../../infra/fixture-repo';
import { startStack, waitFor, type Stack } from '../helpers/stack';
import { git } from '../helpers/git';
import { runResult } from '../helpers/runs';

/**
 * What an agent can do to its workspace's git, from branch content: hooks (through
 * core.hooksPath), an fsmonitor command, a clean/smudge filter on every path, an ssh
 * command and a pager. Every one writes `id` into the marker file when git runs it.
 */
function payload(marker: string): string {
  const hook = `#!/bin/sh\nid >> ${marker}\nexit 0\n`;
  const hooks = [
    'pre-push',
    'post-checkout',
    'pre-commit',
    'post-commit',
    'post-rewrite',
    'post-merge',
    'reference-transaction',
    'pre-auto-gc',
    'push-to-checkout',
  ];
  return [
    'set -e',
    'mkdir -p .attack/hooks',
    ...hooks.map((name) => `printf '${hook.replace(/\n/g, '\\n')}' > .attack/hooks/${name} && chmod +x .attack/hooks/${name}`),
    `printf '#!/bin/sh\\nid >> ${marker}\\ncat\\n' > .attack/filter && chmod +x .attack/filter`,
    `printf '#!/bin/sh\\nid >> ${marker}\\nexit 1\\n' > .attack/fsmonitor && chmod +x .attack/fsmonitor`,
    // Relative paths: git resolves them in the working tree, wherever the host has it.
    'git config core.hooksPath .attack/hooks',
    'git config core.fsmonitor .attack/fsmonitor',
    'git config filter.evil.clean .attack/filter',
    'git config filter.evil.smudge .attack/filter',
    "echo '* filter=evil' >> .git/info/attributes",
    'git config core.sshCommand .attack/hooks/pre-push',
    'git config core.pager .attack/filter',
    'git config protocol.ext.allow always',
    `git config remote.origin.url 'ext::sh -c "id >> ${marker}" '`,
    'git config safe.directory "*"',
  ].join('\n');
}

describe('security: the host never runs git in a repository an agent could write', () => {
  let stack: Stack;
  let markers: string;
  before(async () => {
    stack = await startStack();
    markers = mkdtempSync(join(tmpdir(), 'tarmac-markers-'));
  });
  after(async () => {
    await stack?.stop();
    rmSync(markers, { recursive: true, force: true });
  });

  const markerFiles = () => readdirSync(markers).filter((name) => name !== 'host-secret.json');

  it('the payload is real: applied to a host clone, the next git command runs it', () => {
    // The control: the same payload in a repository the host does open writes the marker.
    const marker = join(markers, 'control');
    const repo = createFixtureRepo({ base: { 'a.txt': 'a\n', '.attack/payload.sh': payload(marker) } });
    execFileSync('sh', ['.attack/payload.sh'], { cwd: repo.clone });
    git(repo.clone, 'commit', '-q', '--allow-empty', '-m', 'x');
    assert.ok(existsSync(marker), 'a hook ran on the host');
    assert.match(readFileSync(marker, 'utf8'), /uid=/);
    rmSync(marker);
  });

  async function runFix(files: Files, body: Record<string, unknown>): Promise<FixOutcome> {
    const repo = createFixtureRepo({ base: files });
    const created = await stack.api('POST', '/v1/fix-loops', { repo: repo.url, branch: 'main', ...body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return (await runResult(stack, created.body.id, 'the fix loop')) as FixOutcome;
  }

  it('a fix loop whose agent poisons .git/config (hooks, fsmonitor, filters, ssh, ext) publishes its fix and nothing runs on the host', async () => {
    const marker = join(markers, 'fix-loop');
    stack.scriptScenario('write-fixed', { edits: [{ file: 'fixed', replace: 'yes\n' }] });
    const outcome = await runFix(
      { Makefile: 'test:\n\ttest -f fixed\n', '.attack/payload.sh': payload(marker) },
      {
        request: 'make test fails',
        reproCommand: 'make test',
        agents: { implementer: 'script#attacker-fixer:write-fixed', ladder: ['script#attacker-fixer:write-fixed'] },
      },
    );
    assert.equal(outcome.outcome, 'fixed', outcome.summary);
    assert.ok(outcome.fixBranch, 'the fix was published (a push from the worker-owned workspace)');
    assert.deepEqual(markerFiles(), [], 'no hook, fsmonitor, filter, ssh command or ext transport ran on the host');
  });

  it('a landing whose resolver poisons its copy merges the resolution and runs nothing on the host', async () => {
    const marker = join(markers, 'landing');
    const gate = gateFile([{ id: 'test', run: ['sh', 'check.sh'] }]);
    const repo = createFixtureRepo({
      base: { 'shared.txt': 'base\n', 'check.sh': 'test -f shared.txt\n', '.config/tarmac/land-gate.json': gate, '.attack/payload.sh': payload(marker) },
      branches: [{ name: 'feature/one', commits: [{ message: 'one', files: { 'shared.txt': 'one\n' } }] }],
    });
    repo.git('checkout', '-q', 'main');
    execFileSync('sh', ['-c', `printf 'target\\n' > ${join(repo.clone, 'shared.txt')}`]);
    repo.git('-c', 'user.name=t', '-c', 'user.email=t@t.invalid', 'commit', '-q', '-am', 'target changes shared');
    repo.git('push', '-q', 'origin', 'main');
    const created = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/one'],
      target: 'main',
      agents: { resolver: 'script#attacker-resolver', ladder: ['script#attacker-resolver'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${created.body.id}`),
      (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
      240_000,
      'the landing',
    );
    assert.equal(view.body.outcome.status, 'landed', view.body.outcome.summary);
    assert.equal(git(repo.path, 'show', 'main:shared.txt'), 'target\none', 'the resolution crossed as a bundle and was merged');
    assert.equal(view.body.outcome.sessions[0].role, 'resolver');
    assert.deepEqual(markerFiles(), [], 'nothing the resolver configured ran on the host');
  });

  it('branch attributes cannot change the gated tree: a test hidden by export-ignore still runs', async () => {
    // check.sh fails while `guard` exists; the branch marks it export-ignore so a `git archive`
    // snapshot would leave it out and the gate would pass on a tree that is not the one merged.
    const gate = gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 0 } });
    const repo = createFixtureRepo({
      base: { 'check.sh': 'if [ -f guard ]; then echo guard present; exit 1; fi\n', '.config/tarmac/land-gate.json': gate },
      branches: [{ name: 'feature/hide', commits: [{ message: 'hide the guard', files: { guard: 'x\n', '.gitattributes': 'guard export-ignore\n' } }] }],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/hide'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await waitFor(
      () => stack.api('GET', `/v1/landings/${created.body.id}`),
      (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
      240_000,
      'the landing',
    );
    assert.equal(view.body.outcome.status, 'gate-failed', view.body.outcome.summary);
    assert.notEqual(git(repo.path, 'rev-parse', 'main'), git(repo.path, 'rev-parse', 'feature/hide'), 'not merged');
  });

  it('an agent whose result.json is a link to a host file delivers nothing, and the host file is never read', async () => {
    // A host file that would be a valid result: if the link were followed, its summary would be delivered.
    const secret = join(markers, 'host-secret.json');
    writeFileSync(secret, JSON.stringify({ status: 'ok', summary: 'HOST-SECRET-7f3a' }));
    const outcome = await runFix(
      { Makefile: 'test:\n\ttest -f fixed\n', '.attack/payload.sh': `ln -sf ${secret} /tarmac/out/result.json\n` },
      {
        request: 'make test fails',
        reproCommand: 'make test',
        maxRepairs: 0,
        agents: { implementer: 'script#attacker-result', ladder: ['script#attacker-result'] },
      },
    );
    assert.notEqual(outcome.outcome, 'fixed');
    assert.ok(outcome.sessions.length > 0 && outcome.sessions.every((session) => session.status !== 'delivered'), JSON.stringify(outcome.sessions));
    assert.doesNotMatch(JSON.stringify(outcome), /HOST-SECRET-7f3a/, 'the host file’s content is nowhere in the outcome');
  });
});
