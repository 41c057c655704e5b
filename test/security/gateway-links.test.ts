import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Docker from 'dockerode';
import { createFixActivities } from '../../activities/fix/fix';
import { startGateway, type GatewayHandle } from '../../activities/gateways/tool-gateway';
import { containerUser } from '../../activities/git/git';
import type { FixOutcome } from '../../core/fix-types';
import { createFixtureRepo } from '../../infra/fixture-repo';
import { startStack, waitFor, type Stack } from '../helpers/stack';
import { commitFiles, git } from '../helpers/git';

const image = 'tarmac/agent-script:bookworm';
const isRoot = process.getuid?.() === 0;

type ToolAnswer = { text: string; isError: boolean; ms: number };

/** Samples the event loop's lateness and the process's memory while `work` runs. */
async function watchLoop<T>(work: () => Promise<T>): Promise<{ value: T; maxLagMs: number; rssGrowth: number }> {
  const baseline = process.memoryUsage().rss;
  let maxRss = baseline;
  let maxLagMs = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    maxLagMs = Math.max(maxLagMs, now - last - 20);
    last = now;
    maxRss = Math.max(maxRss, process.memoryUsage().rss);
  }, 20);
  try {
    const value = await work();
    return { value, maxLagMs, rssGrowth: maxRss - baseline };
  } finally {
    clearInterval(timer);
  }
}

/**
 * An agent's tools, driven the way an agent drives them: an MCP client inside the
 * session container (as its user), through the image's stdio shim and the gateway's
 * mounted socket; the gateway runs in this process, on the host, like the worker's.
 */
describe('security: the tool gateway never leaves the workspace', { timeout: 300_000 }, () => {
  const docker = new Docker();
  const secret = `HOST-SECRET-${randomBytes(6).toString('hex')}`;
  const gitSecret = `GIT-SECRET-${randomBytes(6).toString('hex')}`;
  let base: string;
  let workspace: string;
  let hostDir: string;
  let marker: string;
  let gateway: GatewayHandle;
  let container: Docker.Container;
  let client: Client;

  async function tool(name: string, args: Record<string, unknown>): Promise<ToolAnswer> {
    const started = performance.now();
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
    return {
      text: (result.content as { text: string }[]).map((part) => part.text).join(''),
      isError: result.isError === true,
      ms: performance.now() - started,
    };
  }
  const sh = (command: string) => tool('run_command', { command });

  before(async () => {
    base = mkdtempSync(join(tmpdir(), 'tarmac-gw-links-'));
    workspace = join(base, 'workspace');
    hostDir = join(base, 'host');
    marker = join(hostDir, 'marker.txt');
    mkdirSync(hostDir);
    writeFileSync(marker, `${secret}\n`);
    mkdirSync(join(workspace, 'src'), { recursive: true });
    writeFileSync(join(workspace, 'src', 'app.js'), 'module.exports = 1;\n');
    // One long line: `(a+)+$` over it never ends in a backtracking engine.
    writeFileSync(join(workspace, 'long.txt'), `${'a'.repeat(50_000)}!\n`);
    git(workspace, 'init', '-q');
    git(workspace, 'config', 'tarmac.secret', gitSecret);
    const user = containerUser();
    if (isRoot) execFileSync('chown', ['-R', `${user.uid}:${user.gid}`, workspace]);
    gateway = await startGateway({
      dir: join(base, 'gateway'),
      workspace,
      docker,
      containerId: () => container?.id,
      user: `${user.uid}:${user.gid}`,
      rules: { groundedCommands: [], groundingFiles: [] },
    });
    container = await docker.createContainer({
      Image: image,
      Entrypoint: ['sleep', 'infinity'],
      User: `${user.uid}:${user.gid}`,
      WorkingDir: '/workspace',
      Labels: { 'tarmac.test': 'gateway-links' },
      HostConfig: {
        NetworkMode: 'none',
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Memory: 512 * 1024 * 1024,
        Binds: [`${workspace}:/workspace:rw`, `${gateway.socketDir}:/tarmac/gateway:rw`],
      },
    });
    await container.start();
    client = new Client({ name: 'agent', version: '1' });
    await client.connect(new StdioClientTransport({ command: 'docker', args: ['exec', '-i', container.id, 'node', '/opt/tarmac/shared/tarmac-mcp'] }));
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await container?.remove({ force: true }).catch(() => undefined);
    await gateway?.close();
    rmSync(base, { recursive: true, force: true });
  });

  it('the socket is private to the session: 0700 directory of the container user, socket not world-accessible', async (t) => {
    const user = containerUser();
    const dir = lstatSync(gateway.socketDir);
    assert.equal(dir.mode & 0o777, 0o700, 'the socket directory is 0700');
    assert.equal(dir.uid, user.uid, 'and belongs to the container user');
    assert.equal(statSync(gateway.socketPath).mode & 0o077, 0, 'the socket has no group or world permissions');
    assert.equal(statSync(join(gateway.socketDir, '..')).mode & 0o077, 0, "the worker's socket root is private too");
    // The agent (the container's user) reaches it: every other test here goes through it.
    assert.equal((await tool('read_file', { path: 'src/app.js' })).isError, false);
    if (!isRoot) return t.skip('needs root to try another local uid');
    // The other user runs a node it can execute: the tests' own may sit in root's private cache (setup's Node 24).
    const nodeDir = mkdtempSync(join(tmpdir(), 'tarmac-other-node-'));
    chmodSync(nodeDir, 0o755);
    const otherNode = join(nodeDir, 'node');
    copyFileSync(process.execPath, otherNode);
    chmodSync(otherNode, 0o755);
    const other = await new Promise<string>((done) => {
      const child = spawn(
        otherNode,
        [
          '-e',
          `require('net').connect(${JSON.stringify(gateway.socketPath)}).on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); })`,
        ],
        { uid: 4242, gid: 4242, stdio: ['ignore', 'pipe', 'ignore'] },
      );
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.on('close', () => done(out.trim()));
    });
    rmSync(nodeDir, { recursive: true, force: true });
    assert.equal(other, 'EACCES', 'another local user cannot connect to the gateway');
  });

  it('links the agent makes (ln -s / r, .git g, /etc/passwd x, a host marker) read nothing outside', async () => {
    const made = await sh(`ln -s / r && ln -s .git g && ln -s /etc/passwd x && ln -s ${marker} m && ln -s ${hostDir} d && ln -s src inner`);
    assert.equal(made.isError, false, made.text);
    const reads = [
      ['read_file', { path: 'r/etc/passwd' }],
      ['read_file', { path: 'x' }],
      ['read_file', { path: 'm' }],
      ['read_file', { path: 'd/marker.txt' }],
      ['read_file', { path: `r${marker}` }],
      ['read_file', { path: 'g/config' }],
      ['read_file', { path: 'inner/app.js' }],
      ['read_file', { path: '/workspace/x' }],
      ['list_files', { path: 'r' }],
      ['list_files', { path: 'r/etc' }],
      ['list_files', { path: 'd' }],
      ['list_files', { path: 'g' }],
      ['search', { pattern: secret }],
      ['search', { pattern: secret, path: 'd' }],
      ['search', { pattern: secret, path: `r${hostDir}` }],
      ['search', { pattern: gitSecret }],
      ['search', { pattern: gitSecret, path: 'g' }],
    ] as const;
    for (const [name, args] of reads) {
      const answer = await tool(name, args);
      for (const leaked of [secret, gitSecret, 'root:x:0:0'])
        assert.equal(answer.text.includes(leaked), false, `${name} ${JSON.stringify(args)} returned ${leaked}`);
      // search runs in the container: a path through a link there leads into the container's own filesystem.
      if (name !== 'search') assert.equal(answer.isError, true, `${name} ${JSON.stringify(args)} is refused: ${answer.text}`);
      else assert.ok(answer.text === '' || answer.isError, `${name} ${JSON.stringify(args)} finds nothing: ${answer.text}`);
    }
    const listing = await tool('list_files', { path: '.' });
    assert.deepEqual(
      listing.text
        .split('\n')
        .filter((line) => line.endsWith('@'))
        .sort(),
      ['d@', 'g@', 'inner@', 'm@', 'r@', 'x@'],
      'links are listed as links',
    );
    assert.equal(listing.text.includes('.git'), false, '.git is not listed');
  });

  it('no tool writes a host file or makes one through a link', async () => {
    const before = readFileSync(marker, 'utf8');
    const writes = [
      ['write_file', { path: 'm', content: 'pwned\n' }],
      ['write_file', { path: 'd/new.txt', content: 'pwned\n' }],
      ['write_file', { path: 'd/sub/new.txt', content: 'pwned\n' }],
      ['write_file', { path: `r${hostDir}/root-made.txt`, content: 'pwned\n' }],
      ['write_file', { path: 'g/hooks/pre-commit', content: '#!/bin/sh\nid\n' }],
      ['edit_file', { path: 'm', find: secret, replace: 'pwned' }],
      ['edit_file', { path: 'd/marker.txt', find: secret, replace: 'pwned' }],
    ] as const;
    for (const [name, args] of writes) assert.equal((await tool(name, args)).isError, true, `${name} ${JSON.stringify(args)} is refused`);
    assert.equal(readFileSync(marker, 'utf8'), before, 'the host marker is unchanged');
    assert.deepEqual(readdirSync(hostDir), ['marker.txt'], 'nothing was created in the host directory');
    assert.equal(existsSync(join(workspace, '.git', 'hooks', 'pre-commit')), false, 'no hook was written through the .git link');
    // The tools still work on the workspace itself, and what they create belongs to the agent.
    assert.equal((await tool('write_file', { path: 'notes/ok.txt', content: 'fine\n' })).isError, false);
    assert.equal(readFileSync(join(workspace, 'notes', 'ok.txt'), 'utf8'), 'fine\n');
    assert.equal(statSync(join(workspace, 'notes', 'ok.txt')).uid, containerUser().uid);
    const telemetry = readFileSync(join(base, 'gateway', 'telemetry.jsonl'), 'utf8');
    assert.match(telemetry, /"refused":"m: m is a symbolic link; file tools do not follow links"/, 'refusals are recorded in telemetry');
  });

  it('.git is refused however it is spelled', async () => {
    for (const path of ['.git/config', './.git/config', 'src/../.git/config', '.git/', '.GIT/config', '.Git', '/workspace/.git/config']) {
      const answer = await tool('read_file', { path });
      assert.equal(answer.isError, true, path);
      assert.equal(answer.text.includes(gitSecret), false, path);
    }
    assert.equal((await tool('list_files', { path: '.git' })).isError, true);
    for (const path of ['.git/hooks/post-commit', '.GIT/hooks/post-commit', 'src/../.git/config'])
      assert.equal((await tool('write_file', { path, content: 'x' })).isError, true, path);
    assert.equal(existsSync(join(workspace, '.git', 'hooks', 'post-commit')), false);
    assert.match(readFileSync(join(workspace, '.git', 'config'), 'utf8'), new RegExp(gitSecret), 'the repository config is untouched');
  });

  it('a directory the agent keeps swapping for a link never leads the gateway outside', async () => {
    const ready = await sh(
      [
        `mkdir -p swap && echo inside > swap/marker.txt`,
        // The agent flips `swap` between a real directory and a link to the host directory, in the background.
        `(while :; do mv swap swap.real && ln -s ${hostDir} swap && rm swap && mv swap.real swap; done) >/dev/null 2>&1 & echo $! > /tmp/flipper.pid`,
      ].join('\n'),
    );
    assert.equal(ready.isError, false, ready.text);
    const seen = new Set<string>();
    for (let round = 0; round < 200; round += 1) {
      const answer = await tool('read_file', { path: 'swap/marker.txt' });
      seen.add(answer.isError ? 'refused' : answer.text);
      assert.equal(answer.text.includes(secret), false, 'the host marker was read through the swapped link');
    }
    await sh('kill $(cat /tmp/flipper.pid)');
    assert.ok(seen.has('inside\n'), `the real file was read when it was there (saw ${[...seen].join(', ')})`);
  });

  it('a catastrophic regex does not stall the gateway: it runs in the container, and other calls answer meanwhile', async () => {
    const { value, maxLagMs } = await watchLoop(async () => {
      const search = tool('search', { pattern: '(a+)+$', path: 'long.txt' });
      // A back-reference makes GNU grep backtrack: the search's timeout ends it.
      const slow = tool('search', { pattern: '^(a|aa)+\\1$' });
      await new Promise((done) => setTimeout(done, 500));
      const meanwhile = await tool('read_file', { path: 'src/app.js' });
      return { search: await search, slow: await slow, meanwhile };
    });
    assert.equal(value.search.isError, false, value.search.text);
    assert.equal(value.search.text, '', 'no line ends in a: the search answers, without a hit');
    assert.ok(value.search.ms < 10_000, `the catastrophic pattern answered in ${Math.round(value.search.ms)} ms`);
    assert.equal(value.slow.isError, true);
    assert.match(value.slow.text, /stopped after 10 s/);
    assert.ok(value.slow.ms < 20_000, `the runaway search was stopped (${Math.round(value.slow.ms)} ms)`);
    assert.equal(value.meanwhile.isError, false);
    assert.ok(value.meanwhile.ms < 3_000, `another call answered in ${Math.round(value.meanwhile.ms)} ms while the search ran`);
    assert.ok(maxLagMs < 500, `the event loop (heartbeats) was never late by more than 500 ms (max ${Math.round(maxLagMs)} ms)`);
    assert.equal((await tool('search', { pattern: 'x'.repeat(1001) })).isError, true, 'an overlong pattern is refused');
  });

  it('a command printing 200 MB is capped while it is read: truncation reported, memory bounded, the gateway answers meanwhile', async () => {
    const { value, maxLagMs, rssGrowth } = await watchLoop(async () => {
      const flood = tool('run_command', { command: 'head -c 200000000 /dev/zero | tr "\\000" a; echo; echo the-end' });
      await new Promise((done) => setTimeout(done, 500));
      const meanwhile = await tool('read_file', { path: 'src/app.js' });
      return { flood: await flood, meanwhile };
    });
    assert.equal(value.flood.isError, false);
    const dropped = Number(/output truncated: (\d+) bytes dropped/.exec(value.flood.text)?.[1]);
    assert.ok(dropped > 199_000_000, `the notice says what was dropped: ${value.flood.text.slice(0, 200)}`);
    assert.ok(value.flood.text.length < 64 * 1024, 'the answer is small');
    assert.match(value.flood.text, /the-end\n?$/, 'the tail of the output is kept');
    assert.equal(value.meanwhile.isError, false);
    assert.ok(value.meanwhile.ms < 3_000, `another call answered in ${Math.round(value.meanwhile.ms)} ms during the flood`);
    assert.ok(maxLagMs < 1_000, `the event loop was never late by more than 1 s (max ${Math.round(maxLagMs)} ms)`);
    assert.ok(rssGrowth < 120 * 1024 * 1024, `memory grew by ${Math.round(rssGrowth / 1024 / 1024)} MiB for 200 MB of output`);
    const telemetry = readFileSync(join(base, 'gateway', 'telemetry.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const entry = telemetry.find((line) => line.tool === 'run_command' && String(line.command).startsWith('head -c 200000000'));
    assert.ok(entry && Number(entry.outputDroppedBytes) === dropped && Number(entry.outputBytes) > 200_000_000, 'telemetry records the bytes seen and dropped');
  });
});

describe('security: playbooks never follow a committed link on the host', () => {
  let base: string;
  before(() => {
    base = mkdtempSync(join(tmpdir(), 'tarmac-playbook-links-'));
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  /** A worker-owned run workspace committed from `setup`, and the playbook capsule over it. */
  async function playbookOn(runId: string, log: string, setup: (dir: string) => void) {
    const dataDir = join(base, runId);
    const worktree = join(dataDir, 'runs', runId, 'worktree');
    mkdirSync(worktree, { recursive: true });
    setup(worktree);
    const head = commitFiles(worktree, 'base');
    mkdirSync(join(dataDir, 'logs'), { recursive: true });
    writeFileSync(join(dataDir, 'logs', 'repro.log'), log);
    const applied = await createFixActivities({ dataDir }).applyPlaybook({ runId, logRef: 'logs/repro.log' });
    return { applied, worktree, moved: git(worktree, 'rev-parse', 'HEAD') !== head };
  }

  it('the control: with plain files, the playbook repairs the Makefile', async () => {
    const { applied, worktree, moved } = await playbookOn('control', "make: *** No rule to make target 'up'.  Stop.\n", (dir) => {
      writeFileSync(join(dir, 'Makefile'), 'test:\n\ttrue\n');
      mkdirSync(join(dir, 'scripts'));
      writeFileSync(join(dir, 'scripts', 'up.sh'), 'echo up\n');
    });
    assert.equal(applied?.playbookId, 'make-target-from-script');
    assert.match(readFileSync(join(worktree, 'Makefile'), 'utf8'), /^up:\n\tsh scripts\/up\.sh$/m);
    assert.equal(moved, true);
  });

  it('a Makefile committed as a link to a host file: no playbook, the host file neither read into a patch nor changed', async () => {
    const hostMakefile = join(base, 'host-Makefile');
    const content = `test:\n\ttrue\n# ${randomBytes(4).toString('hex')}\n`;
    writeFileSync(hostMakefile, content);
    const { applied, worktree, moved } = await playbookOn('linked-makefile', "make: *** No rule to make target 'up'.  Stop.\n", (dir) => {
      symlinkSync(hostMakefile, join(dir, 'Makefile'));
      mkdirSync(join(dir, 'scripts'));
      writeFileSync(join(dir, 'scripts', 'up.sh'), 'echo up\n');
    });
    assert.equal(applied, null, 'no playbook applied');
    assert.equal(readFileSync(hostMakefile, 'utf8'), content, 'the host file is unchanged');
    assert.equal(lstatSync(join(worktree, 'Makefile')).isSymbolicLink(), true, 'the link is left as it was');
    assert.equal(moved, false, 'nothing was committed');
  });

  it('a scripts directory committed as a link to a host directory: no playbook', async () => {
    const hostScripts = join(base, 'host-scripts');
    mkdirSync(hostScripts);
    writeFileSync(join(hostScripts, 'up.sh'), 'echo up\n');
    const { applied, worktree, moved } = await playbookOn('linked-scripts', "make: *** No rule to make target 'up'.  Stop.\n", (dir) => {
      writeFileSync(join(dir, 'Makefile'), 'test:\n\ttrue\n');
      symlinkSync(hostScripts, join(dir, 'scripts'));
    });
    assert.equal(applied, null);
    assert.equal(readFileSync(join(worktree, 'Makefile'), 'utf8'), 'test:\n\ttrue\n');
    assert.equal(moved, false);
  });
});

describe('security: a fix loop over a branch whose Makefile links to a host file', { timeout: 300_000 }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  it('the playbook refuses the link; the host file is unchanged and its content appears nowhere', async () => {
    const hostDir = mkdtempSync(join(tmpdir(), 'tarmac-host-makefile-'));
    const hostMakefile = join(hostDir, 'Makefile');
    const secret = `HOST-MAKEFILE-${randomBytes(6).toString('hex')}`;
    const content = `test:\n\ttrue\n# ${secret}\n`;
    writeFileSync(hostMakefile, content);
    // In the repro container the link dangles, so make reports "No rule to make target 'Makefile'";
    // with scripts/Makefile.sh present, a playbook that followed the link would append a target to the host file.
    const repo = createFixtureRepo({ base: { 'scripts/Makefile.sh': 'echo up\n', 'scripts/up.sh': 'echo up\n' } });
    symlinkSync(hostMakefile, join(repo.clone, 'Makefile'));
    repo.git('add', 'Makefile');
    repo.git('commit', '-q', '-m', 'Makefile is a link');
    repo.git('push', '-q', 'origin', 'main');
    try {
      const created = await stack.api('POST', '/v1/fix-loops', {
        repo: repo.url,
        branch: 'main',
        request: 'the app does not start with make up',
        maxRepairs: 0,
        agents: { implementer: 'script#claims-success', ladder: ['script#claims-success'] },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const run = await waitFor(
        () => stack.api('GET', `/v1/runs/${created.body.id}`),
        (response) => response.body?.workflowStatus === 'COMPLETED',
        240_000,
        'the fix loop',
      );
      const outcome = run.body.result as FixOutcome;
      assert.equal(outcome.playbookUsed, null, outcome.summary);
      assert.equal(readFileSync(hostMakefile, 'utf8'), content, 'the host file is unchanged');
      assert.equal(JSON.stringify(run.body).includes(secret), false, 'the outcome carries nothing of the host file');
      const workerLog = readFileSync(join(tmpdir(), `tarmac-test-worker-${basename(stack.dataDir)}.log`), 'utf8');
      assert.match(workerLog, /no playbook applied: Makefile: it is a symbolic link/, 'the worker log says why no playbook was applied');
      assert.equal(workerLog.includes(secret), false);
    } finally {
      rmSync(hostDir, { recursive: true, force: true });
    }
  });
});
