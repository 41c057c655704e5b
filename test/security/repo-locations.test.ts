import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { agentRegistryId } from '../../workflows/agent-registry';
import { createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { freePort } from '../../infra/ports';
import { stopChild } from '../../infra/temporal-server';
import { startStack, testToken, waitFor, type Stack } from '../helpers/stack';

const root = resolve(__dirname, '../..');
/** Stands for a real token: it must never be found anywhere once sent. */
const secret = `tarmac-secret-${randomBytes(12).toString('hex')}`;

/** A one-route HTTP server that records every request it gets; `redirectTo` answers each with a 302 there. */
async function recordingServer(redirectTo?: string): Promise<{ server: Server; url: string; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    if (redirectTo) response.writeHead(302, { location: `${redirectTo}${request.url}` }).end();
    else response.writeHead(404).end();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

/** Every file under `dir` (the data dir: Temporal's SQLite database and its logs, runs, mirrors). */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return entry.isFile() ? [path] : [];
  });
}

/** The four routes that take a repository location, each with an otherwise valid body. */
const routes: { path: string; body: (repo: string) => unknown }[] = [
  { path: '/v1/landings', body: (repo) => ({ repo, branches: ['feature/x'], target: 'main' }) },
  { path: '/v1/reviews', body: (repo) => ({ repo, base: 'main', head: 'feature/x', panel: 'script-trio' }) },
  { path: '/v1/fix-loops', body: (repo) => ({ repo, branch: 'feature/x', request: 'make the test pass' }) },
  { path: '/v1/schedules', body: (repo) => ({ repo, target: 'main', cron: '0 3 * * *' }) },
];

describe('security: repository locations — only the allow-list, never a credential', () => {
  let stack: Stack;
  let api: ChildProcess;
  let apiUrl: string;
  const dir = mkdtempSync(join(tmpdir(), 'tarmac-repo-locations-'));
  const apiLog = join(dir, 'api.log');
  const extMarker = join(dir, 'ext-ran');
  const responses: string[] = [];
  let elsewhere: Awaited<ReturnType<typeof recordingServer>>;
  let redirecting: Awaited<ReturnType<typeof recordingServer>>;

  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${apiUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${testToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    responses.push(text);
    return { status: response.status, body: JSON.parse(text) as { error?: { message: string; details?: { field?: string } } } & Record<string, unknown> };
  };

  before(async () => {
    stack = await startStack();
    // Two real, readable repositories: one in the allowed directory, one in a sibling whose
    // name starts with the allowed one's; and a link from the allowed directory to the sibling.
    const base = { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['true'] }]) };
    const branches = [{ name: 'feature/x', commits: [{ message: 'x', files: { 'x.txt': 'x\n' } }] }];
    createFixtureRepo({ dir: join(dir, 'repos'), name: 'a', base, branches });
    createFixtureRepo({ dir: join(dir, 'repos-evil'), name: 'a', base, branches });
    symlinkSync(join(dir, 'repos-evil', 'a.git'), join(dir, 'repos', 'link.git'));
    // An allowed http location whose server redirects to one the allow-list never named.
    elsewhere = await recordingServer();
    redirecting = await recordingServer(`${elsewhere.url}/elsewhere`);

    // The real `tarmac api` process on the stack's Temporal, with its log kept for the search below.
    const port = await freePort();
    apiUrl = `http://127.0.0.1:${port}`;
    const env = {
      ...process.env,
      TARMAC_DATA_DIR: stack.dataDir,
      TARMAC_TEMPORAL_ADDRESS: stack.server.address,
      TARMAC_API_TOKENS: testToken,
      TARMAC_API_PORT: String(port),
      TARMAC_LOG_LEVEL: 'debug',
      TARMAC_REPO_ALLOW: `file://${join(dir, 'repos')},${redirecting.url}/acme,https://git.example.invalid/acme`,
    };
    api = spawn(process.execPath, ['--import', 'tsx', join(root, 'bin/tarmac.ts'), 'api'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = createWriteStream(apiLog);
    api.stdout?.pipe(log);
    api.stderr?.pipe(log);
    await waitFor(
      async () => {
        if (api.exitCode !== null) throw new Error(`tarmac api exited (${api.exitCode}):\n${readFileSync(apiLog, 'utf8')}`);
        return fetch(`${apiUrl}/healthz`).then(
          (response) => response.status,
          () => 0,
        );
      },
      (status) => status > 0,
      60_000,
      'tarmac api to listen',
    );
  });

  after(async () => {
    if (api) await stopChild(api);
    elsewhere?.server.close();
    redirecting?.server.close();
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const refusals: { name: string; repo: () => string; message: RegExp }[] = [
    { name: 'a sibling directory whose name starts with the allowed one', repo: () => `file://${dir}/repos-evil/a.git`, message: /not allowed/ },
    { name: 'the sibling as a plain path', repo: () => `${dir}/repos-evil/a.git`, message: /not allowed/ },
    { name: '".." out of the allowed directory', repo: () => `file://${dir}/repos/../repos-evil/a.git`, message: /"\.\."/ },
    { name: '".." in a plain path', repo: () => `${dir}/repos/../repos-evil/a.git`, message: /"\.\."/ },
    { name: 'percent-encoded ".." (git decodes it)', repo: () => `file://${dir}/repos/%2e%2e/repos-evil/a.git`, message: /percent-encoded/ },
    { name: 'upper-case percent-encoded ".."', repo: () => `file://${dir}/repos/%2E%2E/repos-evil/a.git`, message: /percent-encoded/ },
    { name: 'a symbolic link in the allowed directory to the sibling', repo: () => `${dir}/repos/link.git`, message: /symbolic link/ },
    { name: 'ext:: (a command as a transport)', repo: () => `ext::sh -c touch% ${extMarker}`, message: /remote-helper/ },
    { name: 'another path on the same allowed host', repo: () => 'https://git.example.invalid/other/a.git', message: /not allowed/ },
    { name: 'a URL with user and password', repo: () => `https://user:${secret}@git.example.invalid/acme/a.git`, message: /credentials.*credential helper/ },
    { name: 'a URL with a token as its user', repo: () => `https://${secret}@git.example.invalid/acme/a.git`, message: /credentials/ },
    { name: 'the scp form with a password', repo: () => `git:${secret}@git.example.invalid:acme/a.git`, message: /credentials/ },
    { name: 'an allowed http location that redirects to another server', repo: () => `${redirecting.url}/acme/a.git`, message: /cannot be read/ },
  ];

  it('refuses every location outside the allow-list on every route: 400 naming repo, no secret echoed, nothing started', async () => {
    for (const { name, repo, message } of refusals) {
      for (const route of routes) {
        const response = await post(route.path, route.body(repo()));
        assert.equal(response.status, 400, `${name} on ${route.path}: ${JSON.stringify(response.body)}`);
        assert.equal(response.body.error?.details?.field, 'repo', `${name} on ${route.path}`);
        assert.match(response.body.error?.message ?? '', /^repo /, `${name} on ${route.path}`);
        assert.match(response.body.error?.message ?? '', message, `${name} on ${route.path}`);
      }
    }
    assert.ok(!existsSync(extMarker), 'the ext:: command never ran');
    assert.ok(redirecting.requests.length > 0, 'git did ask the allowed http location (the redirect case was reached)');
    assert.deepEqual(elsewhere.requests, [], 'git never followed the redirect to a server the allow-list does not name');
    // Visibility of the dev server is immediate, but give a wrongly started run a moment to show.
    await new Promise((done) => setTimeout(done, 2000));
    const started: string[] = [];
    for await (const execution of stack.client.workflow.list()) started.push(`${execution.type} ${execution.workflowId}`);
    // The agent registry is the worker's (it reports what it can run at start), not a request's.
    assert.deepEqual(
      started.filter((entry) => entry !== `agentRegistry ${agentRegistryId}`),
      [],
      'no workflow was started by a refused request',
    );
    const schedules: string[] = [];
    for await (const schedule of stack.client.schedule.list()) schedules.push(schedule.scheduleId);
    // The worker's own retention schedule (one per host, made when it starts) is not a request's either.
    assert.deepEqual(
      schedules.filter((id) => id !== 'tarmac.retention.test-host'),
      [],
      'no schedule was created by a refused request',
    );
  });

  it('the CLI refuses a location with credentials before sending anything (exit 2)', () => {
    const cli = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(root, 'bin/tarmac.ts'), 'land', `https://user:${secret}@git.example.invalid/acme/a.git`, 'feature/x', '--onto', 'main'],
      {
        cwd: root,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, TARMAC_API_URL: elsewhere.url, TARMAC_API_TOKEN: testToken },
        encoding: 'utf8',
      },
    );
    assert.equal(cli.status, 2, cli.stderr);
    assert.match(cli.stderr, /repo must not carry credentials/);
    assert.ok(!`${cli.stdout}${cli.stderr}`.includes(secret), 'the CLI does not print the secret back');
    assert.deepEqual(elsewhere.requests, [], 'no request reached the API');
  });

  it('accepts a location inside the allow-list, by its canonical form, and lands it', async () => {
    const created = await post('/v1/landings', routes[0]!.body(`file://${dir}/repos/./a.git/`));
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.repo, `file://${dir}/repos/a.git`, 'the canonical location is what the run records');
    const id = created.body.id as string;
    const view = await waitFor(
      async () =>
        (await fetch(`${apiUrl}/v1/landings/${id}`, { headers: { authorization: `Bearer ${testToken}` } })).json() as Promise<{
          workflowStatus: string;
          outcome?: { status: string };
        }>,
      (landing) => landing.workflowStatus !== 'RUNNING',
      180_000,
      'the allowed landing',
    );
    assert.equal(view.outcome?.status, 'landed', JSON.stringify(view));
  });

  it('a credential sent in any request is found nowhere: answers, visibility, memos, histories, data dir, API and worker logs', async () => {
    // A filter too: its query string reaches the API's request log before any route runs.
    const listed = await fetch(`${apiUrl}/v1/landings?repo=${encodeURIComponent(`https://user:${secret}@git.example.invalid/acme/a.git`)}`, {
      headers: { authorization: `Bearer ${testToken}` },
    });
    const listedText = await listed.text();
    responses.push(listedText);
    assert.equal(listed.status, 400, listedText);
    assert.equal((JSON.parse(listedText) as { error: { details: { field: string } } }).error.details.field, 'repo');

    const allowedRepo = `${dir}/repos/a.git`;
    const found = (what: string, text: string | Buffer) => assert.equal(text.indexOf(secret), -1, `the secret is in ${what}`);
    found('an API answer', responses.join('\n'));

    // Temporal: every execution's memo and search attributes, and its full history.
    let temporalText = '';
    for await (const execution of stack.client.workflow.list()) {
      const handle = stack.client.workflow.getHandle(execution.workflowId, execution.runId);
      temporalText += JSON.stringify({ memo: execution.memo, searchAttributes: execution.searchAttributes, history: await handle.fetchHistory() });
    }
    assert.ok(temporalText.includes(allowedRepo), 'control: the search reads the runs (the allowed landing is there)');
    found('Temporal visibility, memos or histories', temporalText);

    const files = filesUnder(stack.dataDir);
    assert.ok(
      files.some((file) => basename(file).startsWith('temporal.db')),
      "control: the data dir holds Temporal's database",
    );
    for (const file of files) if (statSync(file).size < 512 * 1024 * 1024) found(file, readFileSync(file));

    const apiText = readFileSync(apiLog, 'utf8');
    assert.match(apiText, /\/v1\/landings\?repo=https%3A%2F%2F\[redacted\]%40git\.example\.invalid/, 'control: the API logged the filter request, redacted');
    found('the API log', apiText);
    const workerLog = join(tmpdir(), `tarmac-test-worker-${basename(stack.dataDir)}.log`);
    assert.ok(existsSync(workerLog), 'control: the worker log exists');
    found('the worker log', readFileSync(workerLog));
  });

  it('`tarmac api` refuses to start without TARMAC_REPO_ALLOW, and never prints a credential from it', () => {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, TARMAC_API_TOKENS: testToken, TARMAC_TEMPORAL_ADDRESS: '127.0.0.1:1', TARMAC_DATA_DIR: dir };
    const unset = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'bin/tarmac.ts'), 'api'], { cwd: root, env, encoding: 'utf8', timeout: 60_000 });
    assert.equal(unset.status, 1, unset.stderr);
    assert.match(unset.stderr, /TARMAC_REPO_ALLOW must list the repository locations/);
    const withSecret = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'bin/tarmac.ts'), 'api'], {
      cwd: root,
      env: { ...env, TARMAC_REPO_ALLOW: `https://user:${secret}@git.example.invalid/acme` },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(withSecret.status, 1, withSecret.stderr);
    assert.match(withSecret.stderr, /TARMAC_REPO_ALLOW: .*credentials/);
    assert.ok(!withSecret.stderr.includes(secret), 'the configuration error does not print the secret');
  });
});
