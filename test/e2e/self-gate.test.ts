import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import { gateFilePath, parseGateFile } from '../../core/gate-file';
import { landingFinished, startStack, type Stack } from '../helpers/stack';

const root = resolve(__dirname, '../..');
const git = (dir: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', '-C', dir, ...args], { encoding: 'utf8' }).trim();

/**
 * The tool gates itself: a clone of this repository (its committed HEAD) is landed by a real stack,
 * its gate file's suites running in the image that file names (tarmac/self-gate, built by setup),
 * with network none like every gate. By default the clone's gate is narrowed to one suite, the
 * typecheck (tsc of the whole tree: Node, npm run and the image's node_modules at work; under a
 * minute), in a commit on the clone's target; TARMAC_TEST_SELF_GATE=full runs the gate file as it is
 * (typecheck, lint, unit tier: a few minutes on two cores).
 */
describe('Tarmac gates itself', () => {
  const full = process.env.TARMAC_TEST_SELF_GATE === 'full';
  let stack: Stack;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tarmac-self-'));
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`a clone of this repository lands through its own gate (${full ? 'every suite' : 'the typecheck'}) in the gate file's image`, { timeout: 20 * 60_000 }, async () => {
    const parsed = parseGateFile(readFileSync(join(root, gateFilePath), 'utf8'));
    assert.ok(parsed.ok, 'the gate file parses');
    const image = parsed.gate.image!;
    const inspected = await new Docker({ socketPath: stack.config.dockerSocket }).getImage(image).inspect().catch(() => undefined);
    assert.ok(inspected, `${image} exists (scripts/setup.sh --tests builds it, or: bash scripts/build-images.sh self-gate)`);

    // A bare clone of the committed HEAD, and a branch with a change a landing can carry.
    const origin = join(dir, 'tarmac.git');
    const work = join(dir, 'work');
    execFileSync('git', ['clone', '--quiet', '--bare', '--branch', 'main', root, origin]);
    execFileSync('git', ['clone', '--quiet', origin, work]);
    if (!full) {
      const narrowed = { ...parsed.gate, suites: parsed.gate.suites.filter((suite) => suite.id === 'typecheck') };
      writeFileSync(join(work, gateFilePath), `${JSON.stringify(narrowed, null, 2)}\n`);
      git(work, 'commit', '--quiet', '-am', 'test: gate on the typecheck only');
      git(work, 'push', '--quiet', 'origin', 'main');
    }
    git(work, 'checkout', '--quiet', '-b', 'feature/self-gate');
    writeFileSync(join(work, 'docs', 'SELF-GATE.md'), 'A change that lands through Tarmac’s own gate.\n');
    git(work, 'add', 'docs/SELF-GATE.md');
    git(work, 'commit', '--quiet', '-m', 'docs: a change to land');
    git(work, 'push', '--quiet', 'origin', 'feature/self-gate');

    const created = await stack.api('POST', '/v1/landings', { repo: `file://${origin}`, branches: ['feature/self-gate'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await landingFinished(stack, created.body.id, 18 * 60_000);
    const outcome = view.outcome;
    const expected = full ? parsed.gate.suites.map((suite) => suite.id) : ['typecheck'];
    assert.deepEqual(
      outcome.gates.map((gate: { suiteId: string; status: string }) => `${gate.suiteId}:${gate.status}`),
      expected.map((id) => `${id}:passed`),
      `${outcome.summary}\n${outcome.gates.map((gate: { logRef: string }) => readFileSync(join(stack.dataDir, gate.logRef), 'utf8').slice(-3000)).join('\n')}`,
    );
    assert.equal(outcome.status, 'landed', outcome.summary);
    const log = (id: string) => readFileSync(join(stack.dataDir, outcome.gates.find((gate: { suiteId: string }) => gate.suiteId === id).logRef), 'utf8');
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    assert.ok(log('typecheck').includes(`> ${scripts.typecheck}\n`), `npm ran the package.json script (${scripts.typecheck}):\n${log('typecheck').slice(-2000)}`);
    if (full) {
      assert.match(log('unit'), /ℹ fail 0/, 'the unit tier ran and nothing failed');
      assert.match(log('unit'), /ℹ pass [1-9][0-9]{2,}/, 'hundreds of unit tests ran');
    }
    assert.equal(git(origin, 'rev-parse', 'main'), outcome.mergedSha);
  });
});
