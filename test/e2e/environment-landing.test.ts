import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import { branchHead, createFixtureRepo, gateFile, type FixtureRepo } from '../../infra/fixture-repo';
import { npmRegistry, pypiHosts, npmLockfile } from '../helpers/registries';
import { containersCreated, landingFinished, startStack, stepRunning, waitFor, type Stack } from '../helpers/stack';

const registry = npmRegistry();
const pypi = pypiHosts();
const pkg = (deps: Record<string, string>) =>
  `${JSON.stringify({ name: 'env-landing', version: '1.0.0', private: true, scripts: { test: `node -e "for (const d of ${JSON.stringify(Object.keys(deps)).replaceAll('"', "'")}) console.log(d, 'loads:', typeof require(d))"` }, dependencies: deps }, null, 2)}\n`;
/** A lockfile made by the machine's own npm for these dependencies, as a user's would be. */
const lockFor = (deps: Record<string, string>): string => npmLockfile(pkg(deps));
const environment = { setup: [`npm ci --no-audit --no-fund --registry ${registry.url}`], inputs: ['package.json', 'package-lock.json'] };

/**
 * Landings of a Node repository that depends on real npm packages (issue 24's acceptance), on the
 * real stack: Temporal, the worker, dockerd, the registry through the worker's egress gateway (its
 * host from the machine's npm configuration, in TARMAC_EGRESS_ALLOW as an operator would set it).
 */
describe('environment landings: a Node repository with real dependencies lands, its environment keyed by the lockfile', () => {
  let stack: Stack;
  let repo: FixtureRepo;
  const docker = new Docker();
  const one = { 'left-pad': '1.3.0' };
  const two = { 'left-pad': '1.3.0', 'is-number': '7.0.0' };
  const lockOne = lockFor(one);
  const lockTwo = lockFor(two);
  const missing = { 'left-pad': '99.0.0' };
  const lockMissing = lockOne.replaceAll('1.3.0', '99.0.0');

  before(async () => {
    stack = await startStack({ workerEnv: { TARMAC_EGRESS_ALLOW: [registry.host, pypi.index, pypi.files].join(',') } });
    // The fixer of the broken lockfile puts the dependency back at a version that exists.
    stack.scriptScenario('restore-lockfile', {
      edits: [
        { file: 'package.json', replace: pkg(one) },
        { file: 'package-lock.json', replace: lockOne },
      ],
    });
    repo = createFixtureRepo({
      base: {
        'package.json': pkg(one),
        'package-lock.json': lockOne,
        'README.md': 'env\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['npm', 'test'] }], { environment, fixup: { maxRounds: 1 } }),
      },
      branches: [
        { name: 'docs', commits: [{ message: 'docs', files: { 'README.md': 'env docs\n' } }] },
        { name: 'more-docs', commits: [{ message: 'more docs', files: { 'NOTES.md': 'notes\n' } }] },
        { name: 'second-dependency', commits: [{ message: 'adds is-number', files: { 'package.json': pkg(two), 'package-lock.json': lockTwo } }] },
        {
          name: 'missing-version',
          commits: [{ message: 'a version that does not exist', files: { 'package.json': pkg(missing), 'package-lock.json': lockMissing } }],
        },
      ],
    });
  });
  after(async () => {
    await stack?.stop();
  });

  async function land(branch: string, extra: Record<string, unknown> = {}) {
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: [branch], target: 'main', ...extra });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return await landingFinished(stack, created.body.id as string);
  }
  let firstKey = '';
  const step = (view: { steps: Array<{ name: string; detail?: string }> }, prefix: string) => view.steps.filter((entry) => entry.name.startsWith(prefix));
  const gateLog = (view: { gates: Array<{ logRef: string }> }) => readFileSync(join(stack.dataDir, view.gates.at(-1)!.logRef), 'utf8');

  it('lands, its gate running npm test with the dependency the setup installed; the egress record names the registry', async () => {
    const view = await land('docs');
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.match(gateLog(view), /left-pad loads: function/);
    const [used] = view.outcome.environments;
    assert.equal(used.cache, 'miss');
    firstKey = used.key;
    assert.ok(
      used.egress.length > 0 && used.egress.every((entry: { host: string; allowed: boolean }) => entry.host === registry.host && entry.allowed),
      JSON.stringify(used.egress),
    );
    assert.match(step(view, 'environment.prepare')[0]!.detail!, /^ENV_CACHE=miss /);
  });

  it('the next landing with the same lockfile reuses the environment: ENV_CACHE=hit, no setup container', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    const view = await land('more-docs');
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.match(step(view, 'environment.prepare')[0]!.detail!, /^ENV_CACHE=hit /);
    assert.equal(view.outcome.environments[0].cache, 'hit');
    assert.equal(await containersCreated(docker, since, ['tarmac.role=environment']), 0);
  });

  it('a branch that adds a dependency lands in an environment built from its own lockfile', async () => {
    const view = await land('second-dependency');
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(view.outcome.environments[0].cache, 'miss');
    assert.notEqual(view.outcome.environments[0].key, firstKey);
    assert.match(gateLog(view), /is-number loads: function/);
  });
  it("environment-failed with no fixer configured: the failing command, npm's error, no session", async () => {
    const broken = createFixtureRepo({
      base: {
        'package.json': pkg(one),
        'package-lock.json': lockOne,
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['npm', 'test'] }], { environment, fixup: { maxRounds: 0 } }),
      },
      branches: [
        {
          name: 'missing-version',
          commits: [{ message: 'a version that does not exist', files: { 'package.json': pkg(missing), 'package-lock.json': lockMissing } }],
        },
      ],
    });
    const baseHead = branchHead(broken.path, 'main');
    const created = await stack.api('POST', '/v1/landings', { repo: broken.url, branches: ['missing-version'], target: 'main' });
    const view = await landingFinished(stack, created.body.id as string);
    assert.equal(view.outcome.status, 'environment-failed', view.outcome.summary);
    assert.match(view.outcome.summary, /setup\[0\] `npm ci .*` exited [1-9]/);
    assert.match(view.outcome.failure.message, /npm (ERR|error)/);
    assert.match(view.outcome.failure.message, /404|ETARGET|E404/);
    assert.equal(view.gates.length, 0, 'no gate ran');
    assert.equal(view.outcome.sessions, undefined, 'no agent ran');
    assert.equal(branchHead(broken.path, 'main'), baseHead, 'nothing was merged');
  });

  it("with a scripted fixer configured, the fixer gets the setup's failure as its input and its fix lands", async () => {
    const broken = createFixtureRepo({
      base: {
        'package.json': pkg(one),
        'package-lock.json': lockOne,
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['npm', 'test'] }], { environment, fixup: { maxRounds: 1 } }),
      },
      branches: [
        {
          name: 'missing-version',
          commits: [
            { message: 'a version that does not exist', files: { 'README.md': 'x\n', 'package.json': pkg(missing), 'package-lock.json': lockMissing } },
          ],
        },
      ],
    });
    const agents = { fixer: 'script#fixer:restore-lockfile', ladder: ['script#fixer:restore-lockfile'] };
    const created = await stack.api('POST', '/v1/landings', { repo: broken.url, branches: ['missing-version'], target: 'main', agents });
    const view = await landingFinished(stack, created.body.id as string);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(view.outcome.sessions.length, 1);
    // The fixer's prompt carried the setup's failure: the command and npm's own error.
    const prompts = execFileSync('find', [join(stack.dataDir, 'runs', created.body.id as string), '-name', 'prompt.md'], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean);
    assert.ok(prompts.length >= 1, 'the fixer session wrote its prompt');
    const prompt = readFileSync(prompts[0]!, 'utf8');
    assert.match(prompt, /environment could not be built/);
    assert.match(prompt, /npm ci/);
    assert.match(prompt, /404|ETARGET|E404/);
    assert.deepEqual(
      view.outcome.environments.map((entry: { failed?: string }) => Boolean(entry.failed)),
      [true, false],
    );
  });

  it('an invalid environment answers at the start with the file, the field and why: invalid-environment, nothing built', async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    const invalid = createFixtureRepo({
      base: {
        'package.json': pkg(one),
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['npm', 'test'] }], { environment: { setup: ['npm ci'], inputs: ['../outside'] } }),
      },
      branches: [{ name: 'docs', commits: [{ message: 'docs', files: { 'README.md': 'x\n' } }] }],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: invalid.url, branches: ['docs'], target: 'main' });
    const view = await landingFinished(stack, created.body.id as string);
    assert.equal(view.outcome.status, 'invalid-environment', view.outcome.summary);
    assert.equal(view.outcome.failure.file, '.config/tarmac/land-gate.json');
    assert.match(view.outcome.failure.field, /^environment\.inputs\[0\]$/);
    assert.equal(await containersCreated(docker, since, [`tarmac.run=${created.body.id as string}`]), 0);
    const devcontainer = createFixtureRepo({
      base: {
        'package.json': pkg(one),
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['npm', 'test'] }]),
        '.devcontainer/devcontainer.json': '{ // a comment\n "image": "tarmac/runner:bookworm", "dockerComposeFile": "compose.yml" }\n',
      },
      branches: [{ name: 'docs', commits: [{ message: 'docs', files: { 'README.md': 'x\n' } }] }],
    });
    const second = await stack.api('POST', '/v1/landings', { repo: devcontainer.url, branches: ['docs'], target: 'main' });
    const refused = await landingFinished(stack, second.body.id as string);
    assert.equal(refused.outcome.status, 'invalid-environment', refused.outcome.summary);
    assert.equal(refused.outcome.failure.file, '.devcontainer/devcontainer.json');
    assert.equal(refused.outcome.failure.field, 'dockerComposeFile');
  });

  it('without an environment in the gate file, the devcontainer declares it: postCreateCommand installs, containerEnv reaches the gate', async () => {
    const devcontainer = `{
  // A devcontainer an editor uses too: the offline subset is read, the rest ignored.
  "name": "env-landing",
  "image": "tarmac/runner:bookworm",
  "postCreateCommand": ["npm", "ci", "--no-audit", "--no-fund", "--registry", "${registry.url}"],
  "containerEnv": { "GREETING": "from the devcontainer" },
  "customizations": { "vscode": { "extensions": ["x.y"] }, "tarmac": { "inputs": ["package.json", "package-lock.json"] } },
}
`;
    const repo = createFixtureRepo({
      base: {
        'package.json': pkg(one),
        'package-lock.json': lockOne,
        '.devcontainer/devcontainer.json': devcontainer,
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', '-c', 'npm test && echo "greeting: $GREETING"'] }]),
      },
      branches: [{ name: 'docs', commits: [{ message: 'docs', files: { 'README.md': 'x\n' } }] }],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['docs'], target: 'main' });
    const view = await landingFinished(stack, created.body.id as string);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.match(gateLog(view), /left-pad loads: function/);
    assert.match(gateLog(view), /greeting: from the devcontainer/);
  });

  it('chaos: the worker SIGKILLed during an environment build; the build starts over, the landing lands, no gate ran in a half-built environment', async () => {
    const slow = { ...environment, setup: ['sleep 3', ...environment.setup] };
    const chaos = createFixtureRepo({
      base: {
        'package.json': pkg(one),
        'package-lock.json': lockOne,
        'CHAOS.md': 'x\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['npm', 'test'] }], { environment: slow }),
      },
      branches: [{ name: 'docs', commits: [{ message: 'docs', files: { 'README.md': 'x\n' } }] }],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: chaos.url, branches: ['docs'], target: 'main' });
    const id = created.body.id as string;
    await stepRunning(stack, id, 'environment.prepare', 'the environment build running');
    const environments = join(stack.dataDir, 'cache', 'environments');
    // The step starts before its build directory is made (the key, the lock): wait for the directory.
    const building = await waitFor(
      async () => readdirSync(environments).filter((name) => name.includes('.build-')),
      (names) => names.length > 0,
      60_000,
      'the build directory',
    );
    assert.equal(building.length, 1, `one build in progress: ${readdirSync(environments).join(', ')}`);
    await stack.killWorker('SIGKILL');
    await stack.startWorker();
    const view = await landingFinished(stack, id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(view.gates.length, 1);
    assert.match(gateLog(view), /left-pad loads: function/);
    const left = readdirSync(environments);
    assert.ok(!left.includes(building[0]!), "the killed build's directory is gone, never used");
    assert.deepEqual(
      left.filter((name) => name.includes('.build-') || name.endsWith('.lock')),
      [],
      'no half build and no lock left',
    );
    const [used] = view.outcome.environments;
    assert.ok(left.includes(used.key.slice(7)), 'the environment the gate ran in is the complete one');
    assert.equal(JSON.parse(readFileSync(join(environments, used.key.slice(7), 'environment.json'), 'utf8')).builtBy.runId, id);
  });

  it('a Python repository (requirements.txt, pip in a venv) lands on the Python base; a pinned version that does not exist ends environment-failed', async () => {
    const pythonEnvironment = {
      image: 'tarmac/python:bookworm',
      setup: ['python3 -m venv .venv', '.venv/bin/pip install --no-cache-dir --disable-pip-version-check -r requirements.txt'],
      inputs: ['requirements.txt'],
    };
    const gate = gateFile([{ id: 'test', run: ['.venv/bin/python', '-c', "import six; print('six', six.__version__, 'from', six.__file__)"] }], {
      environment: pythonEnvironment,
      fixup: { maxRounds: 0 },
    });
    const python = createFixtureRepo({
      base: { 'requirements.txt': 'six==1.16.0\n', '.config/tarmac/land-gate.json': gate },
      branches: [
        { name: 'docs', commits: [{ message: 'docs', files: { 'README.md': 'x\n' } }] },
        { name: 'missing-version', commits: [{ message: 'a version that does not exist', files: { 'requirements.txt': 'six==99.0.0\n' } }] },
      ],
    });
    const landed = await stack.api('POST', '/v1/landings', { repo: python.url, branches: ['docs'], target: 'main' });
    const view = await landingFinished(stack, landed.body.id as string);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.match(gateLog(view), /six 1\.16\.0 from \/workspace\/\.venv\/lib\/python3[0-9.]*\/site-packages\/six\.py/);
    const hosts = new Set(view.outcome.environments[0].egress.map((entry: { host: string }) => entry.host));
    assert.ok(hosts.has(pypi.index), `the index was reached: ${[...hosts].join(', ')}`);
    const broken = await stack.api('POST', '/v1/landings', { repo: python.url, branches: ['missing-version'], target: 'main' });
    const failed = await landingFinished(stack, broken.body.id as string);
    assert.equal(failed.outcome.status, 'environment-failed', failed.outcome.summary);
    assert.match(failed.outcome.summary, /setup\[1\] `\.venv\/bin\/pip install/);
    assert.match(failed.outcome.failure.message, /No matching distribution found for six==99\.0\.0/);
  });
});
