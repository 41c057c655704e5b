import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { gateFilePath, parseGateFile } from '../../core/gate-file';
import { npmRegistry } from '../helpers/registries';
import { containersCreated, landingFinished, startStack, type Stack } from '../helpers/stack';
import { cloneRepo, git } from '../helpers/git';

const root = resolve(__dirname, '../..');
const registry = npmRegistry();
/** The Node the environment's setup fetches: the one scripts/node-env.sh pins. */
const pinnedNode = /^tarmac_node_version=(\S+)$/m.exec(readFileSync(join(root, 'scripts/node-env.sh'), 'utf8'))![1]!;
/** The devDependency the branch adds: small, with no dependencies, not in Tarmac's tree, and with its own types (so the typecheck needs it). */
const added = 'tiny-invariant';

/**
 * The tool gates itself (issue 24: "Tarmac uses it for itself"): a clone of this repository's
 * committed HEAD is landed by a real stack through its own gate file, whose `environment` the worker
 * builds — the pinned Node fetched and `npm ci` run by a setup whose only way out is the egress
 * gateway, the registry's host allowed at run time as an operator would allow it — and the gate
 * suites run in it with network none. No image is built by hand: a branch that adds a devDependency
 * passes the gate in an environment built from its own lockfile.
 *
 * By default the clone's gate is narrowed to its typecheck suite (tsc of the whole tree: Node, npm
 * run and the environment's node_modules at work), in a commit on the clone's target;
 * TARMAC_TEST_SELF_GATE=full runs the gate file as it is (typecheck, lint, unit tier: minutes more).
 * The gate file is this checkout's, so a change to it is tried before it is committed.
 */
describe('Tarmac gates itself in the environment its gate file declares', () => {
  const full = process.env.TARMAC_TEST_SELF_GATE === 'full';
  const parsed = parseGateFile(readFileSync(join(root, gateFilePath), 'utf8'));
  assert.ok(parsed.ok, 'the gate file parses');
  const suites = full ? parsed.gate.suites.map((suite) => suite.id) : ['typecheck'];
  let stack: Stack;
  let dir: string;
  let origin: string;
  let work: string;
  let baseKey = '';
  let branchKey = '';

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tarmac-self-'));
    stack = await startStack({ workerEnv: { TARMAC_EGRESS_ALLOW: registry.host, TARMAC_SETUP_ENV: `npm_config_registry=${registry.url}` } });
    // A bare clone of the committed HEAD with this checkout's gate file (narrowed unless full).
    origin = join(dir, 'tarmac.git');
    work = join(dir, 'work');
    cloneRepo(root, origin, '--bare', '--branch', 'main');
    cloneRepo(origin, work);
    const gate = full ? parsed.gate : { ...parsed.gate, suites: parsed.gate.suites.filter((suite) => suites.includes(suite.id)) };
    writeFileSync(join(work, gateFilePath), `${JSON.stringify(gate, null, 2)}\n`);
    if (git(work, 'status', '--porcelain') !== '') {
      git(work, 'commit', '--quiet', '-am', full ? "test: this checkout's gate file" : 'test: gate on the typecheck only');
      git(work, 'push', '--quiet', 'origin', 'main');
    }
  });
  after(async () => {
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A branch from the target's current head with one commit of these files, pushed. */
  function branch(name: string, message: string, change: () => void): void {
    git(work, 'fetch', '--quiet', 'origin');
    git(work, 'checkout', '--quiet', '-B', name, 'origin/main');
    change();
    git(work, 'add', '-A');
    git(work, 'commit', '--quiet', '-m', message);
    git(work, 'push', '--quiet', 'origin', name);
  }

  /** Lands the branch and checks what any landing through the gate must show: every suite passed, merged. */
  async function land(t: TestContext, name: string): Promise<any> {
    const created = await stack.api('POST', '/v1/landings', { repo: `file://${origin}`, branches: [name], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await landingFinished(stack, created.body.id, 25 * 60_000);
    const outcome = view.outcome;
    // A red suite's own lines that say what failed (the spec reporter's ✖ lines), else its log's tail.
    const red = outcome.gates
      .filter((gate: { status: string }) => gate.status !== 'passed')
      .map((gate: { suiteId: string; logRef: string }) => {
        const log = readFileSync(join(stack.dataDir, gate.logRef), 'utf8');
        const failed = log.split('\n').filter((line) => line.includes('✖'));
        return `${gate.suiteId}:\n${failed.length > 0 ? failed.slice(0, 40).join('\n') : log.slice(-3000)}`;
      });
    assert.deepEqual(
      outcome.gates.map((gate: { suiteId: string; status: string }) => `${gate.suiteId}:${gate.status}`),
      suites.map((id) => `${id}:passed`),
      [outcome.summary, ...red, outcome.failure && outcome.gates.length === 0 ? JSON.stringify(outcome.failure).slice(0, 3000) : ''].join('\n'),
    );
    assert.equal(outcome.status, 'landed', outcome.summary);
    assert.equal(git(origin, 'rev-parse', 'main'), outcome.mergedSha);
    const prepare = view.steps.find((step: { name: string }) => step.name.startsWith('environment.prepare'));
    const environment = outcome.environments[0];
    t.diagnostic(
      `ENV_CACHE=${environment.cache}: environment.prepare ${Date.parse(prepare.endedAt) - Date.parse(prepare.startedAt)} ms (its build ${environment.buildMs} ms); ` +
        outcome.gates.map((gate: { suiteId: string; durationMs: number }) => `${gate.suiteId} ${gate.durationMs} ms`).join(', '),
    );
    return outcome;
  }
  const environmentRoot = (key: string) => join(stack.dataDir, 'cache', 'environments', key.replace(/^sha256:/, ''), 'root');
  const gateLog = (outcome: any, id: string) =>
    readFileSync(join(stack.dataDir, outcome.gates.find((gate: { suiteId: string }) => gate.suiteId === id).logRef), 'utf8');

  it(
    `a change to HEAD lands through its own gate (${full ? 'every suite' : 'the typecheck'}), in an environment the setup built: the pinned Node and npm ci, through the egress gateway`,
    { timeout: 30 * 60_000 },
    async (t) => {
      branch('feature/self-gate', 'docs: a change to land', () =>
        writeFileSync(join(work, 'docs', 'SELF-GATE.md'), 'A change that lands through Tarmac’s own gate.\n'),
      );
      const outcome = await land(t, 'feature/self-gate');
      const [environment] = outcome.environments;
      assert.equal(environment.cache, 'miss', 'a fresh host builds it');
      baseKey = environment.key;
      assert.ok(environment.egress.length > 0, 'the setup reached the registry');
      for (const entry of environment.egress)
        assert.ok(entry.allowed && entry.host === registry.host, `only the registry, through the gateway: ${JSON.stringify(entry)}`);
      // What the gate ran on: the setup's Node (the one node-env.sh pins, not the runner's Debian node) and the lockfile's tree.
      const built = environmentRoot(baseKey);
      assert.equal(execFileSync(join(built, '.tarmac-node', 'bin', 'node'), ['--version'], { encoding: 'utf8' }).trim(), `v${pinnedNode}`);
      assert.ok(existsSync(join(built, 'node_modules', 'typescript', 'package.json')), 'npm ci installed the devDependencies');
      const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
      assert.ok(
        gateLog(outcome, 'typecheck').includes(`> ${scripts.typecheck}\n`),
        `npm ran the package.json script:\n${gateLog(outcome, 'typecheck').slice(-2000)}`,
      );
      if (full) {
        assert.match(gateLog(outcome, 'unit'), /ℹ fail 0/, 'the unit tier ran and nothing failed');
        assert.match(gateLog(outcome, 'unit'), /ℹ pass [1-9][0-9]{2,}/, 'hundreds of unit tests ran');
      }
    },
  );

  it(
    'a branch that adds a devDependency passes the gate with no image built by hand: its environment is built from its own lockfile',
    { timeout: 30 * 60_000 },
    async (t) => {
      assert.ok(baseKey, 'the first landing built the base environment');
      branch('feature/dev-dependency', `build: add ${added} as a devDependency`, () => {
        // The host's npm writes package.json and the lockfile together, as a contributor's would.
        execFileSync(
          'npm',
          ['install', '--save-dev', added, '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--registry', registry.url],
          { cwd: work, stdio: 'ignore' },
        );
        // Code that needs it: the typecheck fails unless the gate's node_modules has the package and its types.
        mkdirSync(join(work, 'scripts'), { recursive: true });
        writeFileSync(
          join(work, 'scripts', 'uses-dev-dependency.ts'),
          `import invariant from '${added}';\n\ninvariant(process.version.startsWith('v'), 'node has a version');\n`,
        );
      });
      const devDependencies = (JSON.parse(readFileSync(join(work, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies;
      assert.ok(devDependencies[added], `npm added ${added} to package.json`);
      const outcome = await land(t, 'feature/dev-dependency');
      const [environment] = outcome.environments;
      assert.equal(environment.cache, 'miss', 'the branch’s lockfile is a new environment');
      assert.notEqual(environment.key, baseKey);
      branchKey = environment.key;
      assert.ok(existsSync(join(environmentRoot(branchKey), 'node_modules', added, 'package.json')), `the branch's environment has ${added}`);
      assert.ok(!existsSync(join(environmentRoot(baseKey), 'node_modules', added)), 'the base environment was not changed');
    },
  );

  it('the next landing on that lockfile reuses its environment: ENV_CACHE=hit, no setup container', { timeout: 20 * 60_000 }, async (t) => {
    assert.ok(branchKey, 'the branch landed in its own environment');
    branch('feature/after-dependency', 'docs: a change after the dependency', () =>
      writeFileSync(join(work, 'docs', 'SELF-GATE.md'), 'A second change through Tarmac’s own gate.\n'),
    );
    const since = Math.floor(Date.now() / 1000) - 1;
    const outcome = await land(t, 'feature/after-dependency');
    assert.deepEqual([outcome.environments[0].cache, outcome.environments[0].key], ['hit', branchKey]);
    assert.equal(await containersCreated(stack.docker, since, ['tarmac.role=environment']), 0, 'no setup ran');
  });
});
