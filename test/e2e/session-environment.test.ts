import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import Docker from 'dockerode';
import { commandContainer, commandStep } from '../../activities/containers/command-container';
import { removeRunContainers } from '../../activities/containers/containers';
import { createEnvironmentActivities, type PrepareEnvironmentInput, type PrepareEnvironmentResult } from '../../activities/environments/environments';
import { containerUser, createGitActivities } from '../../activities/git/git';
import { runPaths } from '../../activities/stores/run-store';
import { createSessionActivities, type RunSessionInput } from '../../activities/sessions/sessions';
import type { EnvironmentRef } from '../../core/environment-types';
import { loadRecipes } from '../../core/node/recipes';
import type { SessionAttemptReport } from '../../core/session-types';
import { createFixtureRepo, type FixtureRepo } from '../../infra/fixture-repo';
import { npmRegistry, npmLockfile } from '../helpers/registries';
import { runningContainer, waitFor } from '../helpers/stack';
import { git } from '../helpers/git';

/**
 * An agent session in a repository environment (issue 24), on the real parts: real Docker, the
 * script harness's image as the agent's container, an environment built from the real npm registry
 * through the egress gateway (its host from the machine's npm configuration), real git. The agent's
 * tools are driven the way an agent drives them: an MCP client inside the session container, through
 * the image's stdio shim and the mounted gateway socket. The activities run in an activity context of
 * their own (no worker).
 */
describe('session environment: run_command runs in a command container of the environment, the CLI in its own', { timeout: 600_000 }, () => {
  const docker = new Docker();
  const dataDir = mkdtempSync(join(tmpdir(), 'tarmac-session-env-'));
  const registry = npmRegistry();
  const hostId = 'test-host';
  const environments = createEnvironmentActivities({ dataDir, hostId, docker, egressAllow: [registry.host] });
  const sessions = createSessionActivities({ dataDir, hostId, docker });
  const gitActivities = createGitActivities({ dataDir, hostId });
  const recipes = loadRecipes();
  const logger = new DefaultLogger('WARN');
  const runId = `session-env.${process.pid}`;
  const sessionId = 'fixer-1';
  const step = `session-${sessionId}-a1`;
  let repo: FixtureRepo;
  let environment: EnvironmentRef;
  let baseSha: string;
  let input: RunSessionInput;
  let running: Promise<SessionAttemptReport>;
  let agentContainer: Docker.ContainerInfo;
  let client: Client;

  async function tool(name: string, args: Record<string, unknown>): Promise<{ text: string; isError: boolean }> {
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
    return { text: (result.content as { text: string }[]).map((part) => part.text).join(''), isError: result.isError === true };
  }
  /** Runs a command in the agent's own container, as its user. */
  const inAgent = (command: string) => execFileSync('docker', ['exec', agentContainer.Id, 'sh', '-c', command], { encoding: 'utf8' });

  before(async () => {
    const pkg = `${JSON.stringify({ name: 'session-env', version: '1.0.0', private: true, dependencies: { 'left-pad': '1.3.0' } }, null, 2)}\n`;
    const lock = npmLockfile(pkg);
    repo = createFixtureRepo({ base: { 'package.json': pkg, 'package-lock.json': lock, 'README.md': 'session env\n' }, branches: [] });

    ({ baseSha } = await gitActivities.prepareSessionWorkspace({ runId, repo: repo.url, ref: 'main' }));
    const prepare: PrepareEnvironmentInput = {
      runId,
      repo: repo.url,
      commitSha: baseSha,
      baseSha,
      declaration: {
        source: 'gate-file',
        file: '.config/tarmac/land-gate.json',
        setup: [`npm ci --no-audit --no-fund --registry ${registry.url}`],
        inputs: ['package.json', 'package-lock.json'],
        cache: [],
        env: { NODE_ENV: 'test' },
        timeoutMs: 5 * 60_000,
      },
    };
    const prepared = await new MockActivityEnvironment({}, { logger }).run<
      [PrepareEnvironmentInput],
      PrepareEnvironmentResult,
      typeof environments.prepareEnvironment
    >(environments.prepareEnvironment, prepare);
    if (!prepared.ok) assert.fail(`the environment failed: ${prepared.failure.why}\n${prepared.failure.logTail}`);
    environment = prepared.environment;
    assert.deepEqual(environment.products, ['node_modules']);

    // The agent: the script harness's `hang` (it waits until it is killed); the test is its model, through the gateway.
    const script = recipes.harnesses.script!;
    input = {
      runId,
      sessionId,
      attempt: 1,
      role: 'fixer',
      harnessModel: 'script#hang',
      harness: { image: script.image, adapter: script.adapter, secrets: script.secrets },
      task: { prompt: 'run the tests' },
      limits: recipes.limits.session,
      repo: repo.url,
      baseSha,
      environment,
    };
    running = new MockActivityEnvironment({}, { logger }).run<[RunSessionInput], SessionAttemptReport, typeof sessions.runSession>(sessions.runSession, input);
    running.catch(() => undefined);
    agentContainer = await runningContainer(docker, [`tarmac.run=${runId}`, `tarmac.step=${step}`], 'the session container');
    client = new Client({ name: 'agent', version: '1' });
    await client.connect(new StdioClientTransport({ command: 'docker', args: ['exec', '-i', agentContainer.Id, 'node', '/opt/tarmac/shared/tarmac-mcp'] }));
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await removeRunContainers(docker, runId);
    if (!process.env.TARMAC_TEST_KEEP) rmSync(dataDir, { recursive: true, force: true });
  });

  it("run_command runs in the environment: the repository's dependency loads, from /workspace", async () => {
    const result = await tool('run_command', { command: `node -e "console.log(require('left-pad')('x',3,'-'))"; pwd; echo "NODE_ENV=$NODE_ENV"` });
    assert.equal(result.isError, false, result.text);
    assert.equal(result.text, 'exit 0\n--x\n/workspace\nNODE_ENV=test\n');
  });

  it('the command container is sandboxed like every container: no network, the environment read-only, not root', async () => {
    const [command] = await docker.listContainers({ filters: JSON.stringify({ label: [`tarmac.run=${runId}`, 'tarmac.role=command'] }) });
    assert.ok(command, 'a command container runs beside the agent');
    const inspected = await docker.getContainer(command.Id).inspect();
    assert.deepEqual(
      [
        inspected.Config.Image,
        inspected.HostConfig.NetworkMode,
        inspected.HostConfig.ReadonlyRootfs,
        inspected.HostConfig.CapDrop,
        inspected.HostConfig.SecurityOpt,
        inspected.Config.User,
      ],
      [environment.image, 'none', true, ['ALL'], ['no-new-privileges'], `${containerUser().uid}:${containerUser().gid}`],
    );
    assert.equal(inspected.Config.Labels['tarmac.step'], commandStep(step));
    // From inside, through the agent's tool: no way out, and the environment's files cannot be written.
    const probe = await tool('run_command', {
      command: `node -e "require('net').connect(443, '${registry.address}').on('connect', () => process.exit(3)).on('error', (e) => console.log('no network:', e.code))"; touch /tarmac/env/node_modules/x 2>&1 | sed 's/.*: //'; id -u`,
    });
    assert.equal(probe.isError, false, probe.text);
    assert.match(probe.text, /no network: (ENETUNREACH|EHOSTUNREACH|ECONNREFUSED)/);
    assert.match(probe.text, /Read-only file system/);
    assert.match(probe.text, new RegExp(`\\n${containerUser().uid}\\n$`));
  });

  it("the agent's own container has none of the environment: the link dangles there", async () => {
    assert.equal(inAgent('readlink node_modules').trim(), '/tarmac/env/node_modules');
    assert.equal(
      inAgent('test -e node_modules/left-pad && echo present || echo absent; test -e /tarmac/env && echo mounted || echo unmounted').trim(),
      'absent\nunmounted',
    );
  });

  it("the links are never committed: git add -A leaves them out, and the agent's commit crosses without them", async () => {
    const committed = await tool('run_command', {
      command: "echo 'notes' > NOTES.md && git add -A && git commit -qm 'notes' && git show --name-only --format= HEAD && git status --porcelain --ignored",
    });
    assert.equal(committed.isError, false, committed.text);
    assert.equal(committed.text, 'exit 0\nNOTES.md\n!! node_modules\n');
  });

  it('a retried attempt finds the same command container by its labels; one stopped is started again, one removed is made again', async () => {
    const [first] = await docker.listContainers({ filters: JSON.stringify({ label: [`tarmac.run=${runId}`, 'tarmac.role=command'] }) });
    const user = containerUser();
    const again = commandContainer({
      docker,
      dataDir,
      runId,
      sessionStep: step,
      labels: {},
      environment,
      workspace: join(runPaths(dataDir, runId).runDir, 'sessions', sessionId, 'a1', 'workspace'),
      readOnly: false,
      objectDirs: [],
      user: `${user.uid}:${user.gid}`,
      env: [],
      memoryBytes: 512 * 1024 ** 2,
      nanoCpus: 1e9,
      pidsLimit: 64,
      logFile: join(dataDir, 'unused.log'),
    });
    assert.equal(await again.ensure(), first!.Id, "a retry's handle reattaches");
    // A command that kills every other process of its user (the wait's sleep too) leaves the container running.
    assert.equal((await tool('run_command', { command: 'kill -9 -1; echo survived' })).text, 'exit 0\nsurvived\n');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal((await docker.getContainer(first!.Id).inspect()).State.Running, true);
    await docker.getContainer(first!.Id).kill();
    const restarted = await tool('run_command', { command: 'cat /etc/hostname' });
    assert.equal(restarted.text, `exit 0\n${first!.Id.slice(0, 12)}\n`, 'the same container, started again');
    await docker.getContainer(first!.Id).remove({ force: true });
    const remade = await tool('run_command', { command: `node -e "console.log(require('left-pad')('y',2,'.'))"` });
    assert.equal(remade.text, 'exit 0\n.y\n');
    const [second] = await docker.listContainers({ filters: JSON.stringify({ label: [`tarmac.run=${runId}`, 'tarmac.role=command'] }) });
    assert.notEqual(second!.Id, first!.Id, 'made again under its labels');
  });

  it('when the agent ends, its commit crosses without the links and the command container goes', async () => {
    await client.close();
    await docker.getContainer(agentContainer.Id).kill();
    const report = await running;
    assert.equal(report.commitsAdded, 1, JSON.stringify(report));
    const files = git(runPaths(dataDir, runId).worktree, 'ls-tree', '-r', '--name-only', report.headSha).split('\n');
    assert.ok(files.includes('NOTES.md'));
    assert.ok(!files.some((file) => file.startsWith('node_modules')), files.join(', '));
    await waitFor(
      () => docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${runId}`, 'tarmac.role=command'] }) }),
      (found) => found.length === 0,
      10_000,
      'the command container to go',
    );
    // The worker's own workspace never had the links.
    assert.throws(() => readlinkSync(join(runPaths(dataDir, runId).worktree, 'node_modules')));
    // The gateway recorded every command, as it always does.
    const telemetry = readFileSync(join(runPaths(dataDir, runId).runDir, 'sessions', sessionId, 'gateway', 'telemetry.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { tool: string; exitCode?: number });
    assert.deepEqual(
      telemetry.map((entry) => [entry.tool, entry.exitCode]),
      Array.from({ length: 6 }, () => ['run_command', 0]),
    );
  });
});
