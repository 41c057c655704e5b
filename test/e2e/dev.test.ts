import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { freePort } from '../../infra/ports';
import { stopChild } from '../../infra/temporal-server';
import { waitFor } from '../helpers/stack';

const root = resolve(__dirname, '../..');

interface Dev {
  process: ChildProcess;
  output: () => string;
}

/** Starts `tarmac dev` (the README's first command, after setup) in `cwd` and waits for its API. */
async function startDev(env: NodeJS.ProcessEnv, apiUrl: string, cwd: string): Promise<Dev> {
  // tsx's loader by absolute path: the project directory has no node_modules of its own.
  const child = spawn(process.execPath, ['--import', join(root, 'node_modules/tsx/dist/loader.mjs'), join(root, 'bin/tarmac.ts'), 'dev'], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`tarmac dev exited (${child.exitCode}):\n${output}`);
      return fetch(`${apiUrl}/healthz`).then(
        (response) => response.status,
        () => 0,
      );
    },
    (status) => status === 200,
    120_000,
    'tarmac dev to serve /healthz',
  );
  // The worker is ready when it says so; landings would queue until then anyway.
  await waitFor(
    async () => output,
    (text) => text.includes('worker started'),
    120_000,
    'the worker to start',
  );
  return { process: child, output: () => output };
}

describe('tarmac dev: the README flow on one machine', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tarmac-dev-'));
  let dev: Dev | undefined;
  after(async () => {
    if (dev) await stopChild(dev.process, 30_000);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('honours .env (the environment wins over it), lands the demo branch over HTTP, lists it in the Web UI by TarmacRepo, and resumes in-flight runs after Ctrl-C', async () => {
    const [apiPort, temporalPort, uiPort, filePort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    // A project directory with a .env, as `cp .env.example .env` makes one: the UI port comes only
    // from the file; the API port is in both, and the environment's wins.
    const project = join(dataDir, 'project');
    mkdirSync(project);
    writeFileSync(join(project, '.env'), `# the operator's settings\nTARMAC_TEMPORAL_UI_PORT=${uiPort}\nTARMAC_API_PORT=${filePort}\n`);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TARMAC_DATA_DIR: dataDir,
      TARMAC_API_PORT: String(apiPort),
      TARMAC_TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
      TARMAC_API_TOKENS: '',
      TARMAC_LOG_LEVEL: 'info',
      // A fresh machine: no provider key, the public upstreams (the demo needs no agent).
      ANTHROPIC_API_KEY: '',
      OPENAI_API_KEY: '',
      TARMAC_MODEL_UPSTREAM_ANTHROPIC: '',
      TARMAC_MODEL_UPSTREAM_OPENAI: '',
    };
    // scripts/test.sh turns .env off for the whole suite; this test is about reading it.
    delete env.TARMAC_ENV_FILE;
    delete env.TARMAC_TEMPORAL_UI_PORT;
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    dev = await startDev(env, apiUrl, project);
    assert.match(dev.output(), new RegExp(`Temporal UI\\s+http://127.0.0.1:${uiPort}`), 'the UI port from .env');
    // The shipped defaults cannot run with no key: one line says so, and what to set, before any landing finds out.
    const notes = dev
      .output()
      .split('\n')
      .filter((line) => line.startsWith('  Note '));
    assert.equal(notes.length, 1, dev.output());
    assert.match(
      notes[0]!,
      /^ {2}Note {11}the default panel cannot run here: claude-code#claude-sonnet-4-5 needs ANTHROPIC_API_KEY, codex#gpt-5-codex needs OPENAI_API_KEY, .*; set what is missing, or mark the panel "unavailable": "skip" in recipes\/panels\.json\. And the default ladder cannot run here: .*claude-code#claude-haiku-4-5 needs ANTHROPIC_API_KEY.*; set a provider's key$/,
    );
    assert.match(dev.output(), new RegExp(`API\\s+http://127.0.0.1:${apiPort}\\s`), "the environment's API port, not the file's");
    assert.equal(
      await fetch(`http://127.0.0.1:${filePort}/healthz`).then(
        () => 'up',
        () => 'down',
      ),
      'down',
      "nothing listens on the file's API port",
    );
    const read = dev
      .output()
      .split('\n')
      .map((line) => {
        try {
          return JSON.parse(line) as { name?: string; msg?: string; envFile?: string; fromFile?: string[]; fromEnvironment?: string[] };
        } catch {
          return undefined;
        }
      })
      .find((entry) => entry?.name === 'tarmac-dev' && entry.msg?.startsWith('settings read from the env file'));
    assert.ok(read, `tarmac dev logs that it read the file:\n${dev.output()}`);
    assert.deepEqual(
      [read.envFile, read.fromFile, read.fromEnvironment],
      [join(project, '.env'), ['TARMAC_TEMPORAL_UI_PORT'], ['TARMAC_API_PORT']],
      'names only, never values',
    );

    // `npm run demo` + the README's curl example.
    const demoUrl = execFileSync(process.execPath, ['--import', 'tsx', join(root, 'scripts/demo-repo.ts'), join(dataDir, 'demo')], {
      cwd: root,
      encoding: 'utf8',
    }).trim();
    const demoPath = demoUrl.replace('file://', '');
    const token = readFileSync(join(dataDir, 'api-token'), 'utf8').trim();
    const post = (body: unknown) =>
      fetch(`${apiUrl}/v1/landings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const get = async (id: string) => (await fetch(`${apiUrl}/v1/landings/${id}`, { headers: { authorization: `Bearer ${token}` } })).json() as Promise<any>;
    const created = await post({ repo: demoUrl, branches: ['feature/greeting'], target: 'main' });
    assert.equal(created.status, 201);
    const { id } = (await created.json()) as { id: string };
    const landed = await waitFor(
      () => get(id),
      (view) => view.workflowStatus === 'COMPLETED',
      120_000,
      'the demo landing',
    );
    assert.equal(landed.outcome.status, 'landed', landed.outcome.summary);
    assert.equal(branchHead(demoPath, 'main'), branchHead(demoPath, 'feature/greeting'));

    // The Web UI's own HTTP API, as its workflow list page calls it.
    const query = encodeURIComponent(`TarmacRepo="${demoUrl}" AND TarmacKind="landing"`);
    const ui = await waitFor(
      async () => (await fetch(`http://127.0.0.1:${uiPort}/api/v1/namespaces/default/workflows?query=${query}`)).json() as Promise<any>,
      (body) => Array.isArray(body.executions) && body.executions.length > 0,
      30_000,
      'the Web UI to list the landing',
    );
    assert.deepEqual(
      ui.executions.map((execution: any) => execution.execution.workflowId),
      [id],
    );

    // A landing in flight across Ctrl-C: its gate is still running when `tarmac dev` stops.
    const slow = createFixtureRepo({
      dir: join(dataDir, 'slow'),
      base: { 'wait.sh': 'sleep 6; echo gate done\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'wait', run: ['sh', 'wait.sh'] }]) },
      branches: [{ name: 'feature/slow', commits: [{ message: 'slow', files: { 'b.txt': 'b\n' } }] }],
    });
    const slowCreated = await post({ repo: slow.url, branches: ['feature/slow'], target: 'main' });
    const slowId = ((await slowCreated.json()) as { id: string }).id;
    await waitFor(
      () => get(slowId),
      (view) => view.phase === 'gate',
      60_000,
      'the slow landing to reach its gate',
    );
    dev.process.kill('SIGINT');
    const code = await new Promise<number | null>((done) => dev!.process.once('exit', (exitCode) => done(exitCode)));
    assert.equal(code, 0, `tarmac dev stops cleanly on Ctrl-C:\n${dev.output()}`);
    assert.equal(
      await fetch(`${apiUrl}/healthz`).then(
        () => 'up',
        () => 'down',
      ),
      'down',
      'the API stopped with it',
    );
    assert.notEqual(branchHead(slow.path, 'main'), branchHead(slow.path, 'feature/slow'), 'not landed before the restart');

    dev = await startDev(env, apiUrl, project);
    const resumed = await waitFor(
      () => get(slowId),
      (view) => view.workflowStatus === 'COMPLETED',
      120_000,
      'the slow landing to resume',
    );
    assert.equal(resumed.outcome.status, 'landed', resumed.outcome.summary);
    assert.equal(branchHead(slow.path, 'main'), branchHead(slow.path, 'feature/slow'));
    assert.equal((await get(id)).outcome.status, 'landed', 'earlier runs survive the restart (SQLite)');
  });
});
