import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { freePort } from '../../infra/ports';
import { branchHead, createFixtureRepo, gateFile, type FixtureBranch, type Files } from '../../infra/fixture-repo';
import { cleanedUp, runningContainer, startStack, testToken, waitFor, type Stack } from '../helpers/stack';
import { tarmac, type CliRun } from '../helpers/tarmac-cli';

const root = resolve(__dirname, '../..');

const hasScript = spawnSync('script', ['--version']).status === 0;

/** What a terminal shows after the bytes: enough of VT100 for the CLI (newline, CR, cursor up, clear below). */
function terminal(raw: string): string[] {
  const rows: string[] = [];
  let row = 0;
  // eslint-disable-next-line no-control-regex
  for (const token of raw.split(/(\x1b\[\d*A|\x1b\[0J|\r|\n)/)) {
    if (!token || token === '\r') continue;
    // eslint-disable-next-line no-control-regex
    const up = /^\x1b\[(\d*)A$/.exec(token);
    if (up) row = Math.max(0, row - Number(up[1] || 1));
    else if (token === '\x1b[0J') rows.length = Math.min(rows.length, row);
    else if (token === '\n') row += 1;
    else {
      while (rows.length <= row) rows.push('');
      rows[row] += token;
    }
  }
  return rows;
}

const phasesOf = (run: CliRun) =>
  run.lines.map((line) => /^\[\+\d+:\d\d\] phase (\S+)$/.exec(line.text)?.[1]).filter((phase): phase is string => phase !== undefined);

/** The demo repository of `npm run demo`, with a gate that takes a few seconds so phases can be seen live. */
function demoRepo(gateExtra: Record<string, unknown> = {}, base: Files = {}, branches?: FixtureBranch[]) {
  return createFixtureRepo({
    base: {
      Makefile: 'test:\n\tnode test.js\n',
      'greeting.js': "module.exports = () => 'hello';\n",
      'test.js': "const assert = require('node:assert');\nassert.strictEqual(require('./greeting.js')(), 'hello');\nconsole.log('ok');\n",
      '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', '-c', 'sleep 3; make test'], timeout: '2m' }], gateExtra),
      ...base,
    },
    branches: branches ?? [
      {
        name: 'feature/greeting',
        commits: [
          {
            message: 'greeting: say hello to someone',
            files: {
              'greeting.js': "module.exports = (name) => (name ? `hello, ${name}` : 'hello');\n",
              'test.js':
                "const assert = require('node:assert');\nconst greet = require('./greeting.js');\nassert.strictEqual(greet(), 'hello');\nassert.strictEqual(greet('ada'), 'hello, ada');\nconsole.log('ok');\n",
            },
          },
        ],
      },
    ],
  });
}

describe('tarmac CLI against the real stack', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  it('land --watch on the demo repo: live phase changes in order, the merged outcome, exit 0; origin target is the merged SHA', async () => {
    const repo = demoRepo();
    const head = branchHead(repo.path, 'feature/greeting');
    const run = await tarmac(['land', repo.url, 'feature/greeting', '--onto', 'main', '--watch'], { apiUrl: stack.apiUrl });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    const id = /^landing (\S+) started: feature\/greeting@[0-9a-f]{7} onto main@[0-9a-f]{7}$/m.exec(run.stdout)?.[1];
    assert.ok(id, run.stdout);
    assert.match(
      run.stdout,
      new RegExp(`^ {2}${stack.apiUrl.replace(/[.]/g, '\\.')}/v1/landings/${id.replace(/[.]/g, '\\.')}$`, 'm'),
      'the URL of the landing',
    );
    assert.deepEqual(phasesOf(run), ['validate', 'prepare', 'rebase', 'questions', 'gate', 'verify', 'queue', 'merge', 'cleanup', 'done']);
    assert.match(run.stdout, /^\[\+\d+:\d\d\] gate ✓ test round 1 passed \(exit 0, [\d.]+ s\) on tree [0-9a-f]{7} · log /m);
    assert.match(run.stdout, /^\[\+\d+:\d\d\] outcome landed: /m);
    const merged = branchHead(repo.path, 'main');
    assert.equal(merged, head, 'main on origin advanced to the gated head');
    assert.match(run.stdout, new RegExp(`^merged: main is now ${merged}$`, 'm'));
    assert.match(run.stdout, /^meters: tokens 0 in \/ 0 out · cost \$0\.0000 · containers 1 · sessions 0 · capsules \d+ · wall [\d.]+ s$/m);
    // Live, not a dump at the end: the gate phase was on screen while the 3 s gate ran.
    const at = (pattern: RegExp) => run.lines.find((line) => pattern.test(line.text))!.at;
    assert.ok(at(/ outcome landed/) - at(/ phase gate$/) >= 2_500, 'the gate phase was shown before the gate finished');
    // Steps reported while they end, gates included; nothing after the outcome but the summary.
    assert.ok(run.lines.findIndex((line) => / phase merge$/.test(line.text)) < run.lines.findIndex((line) => /^outcome: landed/.test(line.text)));

    const again = await tarmac(['land', repo.url, 'feature/greeting', '--onto', 'main'], { apiUrl: stack.apiUrl });
    assert.equal(again.code, 0);
    assert.match(again.stdout, /^landing .* already exists for these heads/m, 'a duplicate says so');

    const status = await tarmac(['status', id], { apiUrl: stack.apiUrl });
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^${id.replace(/[.]/g, '\\.')} {2}COMPLETED {2}phase done$`, 'm'));
    assert.match(status.stdout, /^ {2}✓ capsule\.fastForwardTarget/m);
    assert.match(status.stdout, /^outcome: landed — /m);
    const json = await tarmac(['status', id, '--json'], { apiUrl: stack.apiUrl });
    assert.equal(JSON.parse(json.stdout).outcome.mergedSha, merged, '--json prints the API record');
  });

  it('npm run demo, then land --watch on exactly that repository: merged, exit 0', async () => {
    // The README's walk-through, verbatim: the demo script makes the repo, the CLI lands its branch.
    const dir = mkdtempSync(join(tmpdir(), 'tarmac-demo-'));
    const url = execFileSync(process.execPath, ['--import', 'tsx', join(root, 'scripts/demo-repo.ts'), dir], { encoding: 'utf8' }).trim();
    assert.match(url, /^file:\/\/.*demo\.git$/);
    const run = await tarmac(['land', url, 'feature/greeting', '--onto', 'main', '--watch'], { apiUrl: stack.apiUrl });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.deepEqual(phasesOf(run), ['validate', 'prepare', 'rebase', 'questions', 'gate', 'verify', 'queue', 'merge', 'cleanup', 'done']);
    assert.match(run.stdout, /^\[\+\d+:\d\d\] outcome landed: /m);
    const bare = fileURLToPath(url);
    assert.equal(branchHead(bare, 'main'), branchHead(bare, 'feature/greeting'), 'main on the demo origin is the landed head');
    rmSync(dir, { recursive: true, force: true });
  });

  it('on a terminal, land --watch redraws one block in place and ends on the whole picture', async () => {
    assert.ok(hasScript, 'script(1) is not installed (Debian: bsdutils, an essential package)');
    // Another tree than the first test's demo repository: its gate runs (no gate-cache hit) while the screen is redrawn.
    const repo = demoRepo({}, { 'terminal.txt': 'a tree of its own\n' });
    const command = `stty cols 100 rows 40; exec ${process.execPath} --import ${join(root, 'node_modules/tsx/dist/loader.mjs')} ${join(root, 'bin/tarmac.ts')} land ${repo.url} feature/greeting --onto main --watch`;
    // script(1) gives the command a real pseudo-terminal and copies what it draws.
    const run = await new Promise<{ code: number | null; raw: string }>((done) => {
      const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
        env: { PATH: process.env.PATH, HOME: process.env.HOME, TERM: 'xterm', TARMAC_ENV_FILE: '', TARMAC_API_URL: stack.apiUrl, TARMAC_API_TOKEN: testToken },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let raw = '';
      child.stdout.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      child.once('exit', (code) => done({ code, raw }));
    });
    assert.equal(run.code, 0, run.raw);
    // eslint-disable-next-line no-control-regex
    const redraws = run.raw.match(/\x1b\[\d+A/g) ?? [];
    assert.ok(redraws.length >= 3, `redrawn in place while it ran (${redraws.length} redraws)`);
    const screen = terminal(run.raw);
    const title = screen.findIndex((line) => /land\.origin\.main\.\S+ {2}phase done {2}→ landed$/.test(line));
    assert.ok(title !== -1, `the final picture has the phase and the outcome:\n${screen.join('\n')}`);
    assert.equal(screen.filter((line) => / phase /.test(line)).length, 1, 'one block, not a scroll of copies');
    for (const step of [
      'capsule.inspectTarget',
      'capsule.prepareRun',
      'capsule.rebaseBranches',
      'gate.runSuite:test#1',
      'capsule.fastForwardTarget',
      'capsule.finishRun',
    ]) {
      assert.ok(
        screen.some((line) => line.startsWith(`  ✓ ${step} `)),
        `step ${step} is marked done`,
      );
    }
    assert.ok(
      screen.some((line) => /^ {2}tokens 0 in \/ 0 out · cost \$0\.0000 · containers 1 · sessions 0 · capsules \d+ · wall [\d.]+ s$/.test(line)),
      'the meters',
    );
    assert.ok(
      screen.some((line) => line === '  │ ok'),
      'the log tail shows the suite output',
    );
    // The redrawn block must never wrap, or the cursor could not get back to its top (the summary after it may).
    const block = screen.slice(
      title,
      screen.findIndex((line) => line.startsWith('outcome: landed')),
    );
    assert.ok(block.length > 8 && block.every((line) => line.length < 100), `no line of the block wider than the terminal:\n${block.join('\n')}`);
    assert.equal(branchHead(repo.path, 'main'), branchHead(repo.path, 'feature/greeting'));
  });

  it('land --watch with a red gate: exit 1 with the outcome summary naming the suite and its log; target unchanged', async () => {
    const repo = demoRepo({ fixup: { maxRounds: 0 } }, {}, [
      { name: 'feature/rude', commits: [{ message: 'greeting: be rude', files: { 'greeting.js': "module.exports = () => 'go away';\n" } }] },
    ]);
    const before = branchHead(repo.path, 'main');
    const run = await tarmac(['land', repo.url, 'feature/rude', '--onto', 'main', '--watch'], { apiUrl: stack.apiUrl });
    assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`);
    assert.deepEqual(phasesOf(run).slice(0, 5), ['validate', 'prepare', 'rebase', 'questions', 'gate']);
    assert.ok(!phasesOf(run).includes('merge'), 'no merge phase');
    assert.match(run.stdout, /^\[\+\d+:\d\d\] gate ✗ test round 1 failed \(exit 2,/m);
    assert.match(run.stdout, /^outcome: gate-failed — .*test exited 2/m);
    assert.match(run.stdout, /^ {2}✗ gate test round 1 failed \(exit 2\) · log runs\/.*\.log$/m, 'the failing suite and where its log is');
    assert.equal(branchHead(repo.path, 'main'), before, 'target unchanged');

    // retry --watch follows the new run's event stream the same way, to the same end.
    const id = /^landing (\S+) started/m.exec(run.stdout)![1]!;
    const retried = await tarmac(['retry', id, '--watch'], { apiUrl: stack.apiUrl });
    assert.equal(retried.code, 1, `${retried.stdout}\n${retried.stderr}`);
    assert.match(retried.stdout, new RegExp(`^landing ${id.replace(/[.]/g, '\\.')}\\.retry-2 started: attempt 2 of feature/rude@`, 'm'));
    assert.deepEqual(phasesOf(retried).slice(0, 5), ['validate', 'prepare', 'rebase', 'questions', 'gate'], 'live phases of the retry');
    assert.match(retried.stdout, /^outcome: gate-failed — /m);
  });

  it('status shows a pending question; answer lets the landing go on; watch follows it to landed', async () => {
    const repo = demoRepo({}, {}, [
      {
        name: 'feature/gate',
        commits: [{ message: 'gate: no sleep', files: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'] }]) } }],
      },
    ]);
    const started = await tarmac(['land', repo.url, 'feature/gate', '--onto', 'main'], { apiUrl: stack.apiUrl });
    assert.equal(started.code, 0, started.stderr);
    const id = /^landing (\S+) started/m.exec(started.stdout)![1]!;
    assert.match(started.stdout, new RegExp(`follow it with: tarmac watch ${id.replace(/[.]/g, '\\.')}`));
    await waitFor(
      () => stack.api('GET', `/v1/landings/${id}`),
      (response) => response.body.pendingQuestions?.length === 1,
      60_000,
      'the question',
    );

    const status = await tarmac(['status', id], { apiUrl: stack.apiUrl });
    assert.equal(status.code, 0);
    assert.match(status.stdout, /phase questions$/m);
    assert.match(status.stdout, /^question gate-file-edit \(from the landing; [^)]*\): .*land-gate\.json/m, 'the question, who asked and why');
    assert.match(status.stdout, new RegExp(`answer with: tarmac answer ${id.replace(/[.]/g, '\\.')} "<text>"`));

    const answered = await tarmac(['answer', id, 'approved'], { apiUrl: stack.apiUrl });
    assert.equal(answered.code, 0, answered.stderr);
    assert.match(answered.stdout, /^answer to \S+ accepted: landing .* continues$/m);
    const watched = await tarmac(['watch', id], { apiUrl: stack.apiUrl });
    assert.equal(watched.code, 0, `${watched.stdout}\n${watched.stderr}`);
    assert.match(watched.stdout, /question gate-file-edit \(from the landing; [^)]*\): .*land-gate\.json/, 'the replayed question');
    assert.match(watched.stdout, /answered \S+: approved\b/);
    assert.match(watched.stdout, /^outcome: landed/m);
    assert.equal(branchHead(repo.path, 'main'), branchHead(repo.path, 'feature/gate'));

    const late = await tarmac(['answer', id, 'too late'], { apiUrl: stack.apiUrl });
    assert.equal(late.code, 2, 'a refused request exits 2');
    assert.match(late.stderr, /^tarmac: TARMAC_CONFLICT: run .* is not running \(COMPLETED\); nothing to answer$/m);
  });

  it('cancel a landing whose gate sleeps: watch ends with cancelled and exit 1; a second cancel is refused', async () => {
    const slow = createFixtureRepo({
      base: { 'slow.sh': 'sleep 120\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'slow', run: ['sh', 'slow.sh'] }]) },
      branches: [{ name: 'feature/slow', commits: [{ message: 'slow', files: { 's.txt': 's\n' } }] }],
    });
    const before = branchHead(slow.path, 'main');
    // A repository named by a path relative to where the user stands (the API runs elsewhere).
    const started = await tarmac(['land', basename(slow.path), 'feature/slow', '--onto', 'main'], { apiUrl: stack.apiUrl, cwd: dirname(slow.path) });
    assert.equal(started.code, 0, started.stderr);
    const id = /^landing (\S+) started/m.exec(started.stdout)![1]!;
    await runningContainer(stack.docker, [`tarmac.run=${id}`], 'the gate container', 90_000);

    const cancelled = await tarmac(['cancel', id], { apiUrl: stack.apiUrl });
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.match(cancelled.stdout, /^cancel requested for /m);
    const watched = await tarmac(['watch', id], { apiUrl: stack.apiUrl });
    assert.equal(watched.code, 1, `${watched.stdout}\n${watched.stderr}`);
    assert.match(watched.stdout, /^outcome: cancelled/m);
    await cleanedUp(stack.dataDir, id);
    const left = await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${id}`] }) });
    assert.equal(left.length, 0, 'no container of the run is left');
    assert.equal(branchHead(slow.path, 'main'), before, 'target unchanged');

    const again = await tarmac(['cancel', id], { apiUrl: stack.apiUrl });
    assert.equal(again.code, 2);
    assert.match(again.stderr, /TARMAC_CONFLICT: landing .* is not running/);
    const unknown = await tarmac(['status', 'land.nope.main.0'], { apiUrl: stack.apiUrl });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^tarmac: TARMAC_NOT_FOUND: no run land\.nope\.main\.0$/m);
  });

  it('watch --logs rides out an API restart: it resumes with Last-Event-ID; every phase and log line shown once, in order', async () => {
    // The gate talks, pauses (the API restarts meanwhile), then talks again.
    const repo = demoRepo(
      {},
      { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', '-c', 'echo tick-1; sleep 3; echo tick-2; make test'] }]) },
    );
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/greeting'], target: 'main' });
    assert.equal(created.status, 201);
    const port = await freePort();
    const apiUrl = `http://127.0.0.1:${port}`;
    const listen = async () => {
      const app = await buildApp({ client: stack.client, config: stack.config });
      await app.listen({ host: '127.0.0.1', port });
      return app;
    };
    let app: FastifyInstance = await listen();
    let restarted!: Promise<void>;
    let restartedOnce = false;
    const watching = tarmac(['watch', created.body.id, '--logs'], {
      apiUrl,
      onLine: (line) => {
        // While the gate runs, after its first log line, the API goes away and comes back on the same address.
        if (!restartedOnce && /^log \S+: tick-1$/.test(line)) {
          restartedOnce = true;
          restarted = (async () => {
            await app.close();
            await new Promise((wait) => setTimeout(wait, 1_000));
            app = await listen();
          })();
        }
      },
    });
    const run = await watching;
    await restarted;
    await app.close();
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.ok(restartedOnce, 'the API was restarted mid-watch');
    assert.match(run.stderr, /event stream interrupted .*reconnecting, attempt 1, after event \d+/, 'the reconnection is reported on stderr');
    assert.deepEqual(
      phasesOf(run),
      ['validate', 'prepare', 'rebase', 'questions', 'gate', 'verify', 'queue', 'merge', 'cleanup', 'done'],
      'no phase missed or repeated',
    );
    assert.equal(run.lines.filter((line) => / gate ✓ test round 1 passed/.test(line.text)).length, 1);
    // Log lines have no journal number: only the resume cursor keeps them from being sent again.
    const logs = run.lines.filter((line) => line.text.startsWith('log ')).map((line) => line.text.replace(/^log \S+: /, ''));
    assert.deepEqual(logs, ['tick-1', 'tick-2', 'node test.js', 'ok'], 'every log line once, in order');
    assert.match(run.stdout, /^outcome: landed/m);
  });

  it('fix --wait: a playbook fixes `make up`; the fix branch is printed and exists on origin', async () => {
    const repo = createFixtureRepo({ base: { Makefile: 'test:\n\ttrue\n', 'scripts/up.sh': 'echo services are up\n' } });
    const run = await tarmac(['fix', repo.url, 'main', 'the app does not start with make up', '--wait'], { apiUrl: stack.apiUrl });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    // It waited by following the fix loop's event stream: its phases and outcome as they came.
    assert.ok(phasesOf(run).length >= 2, `the fix loop's phases, live:\n${run.stdout}`);
    assert.match(run.stdout, /^\[\+\d+:\d\d\] outcome fixed: /m);
    assert.match(run.stdout, /^outcome: fixed — /m);
    const branch = /^fix branch: (tarmac\/fix\/\S+)/m.exec(run.stdout)?.[1];
    assert.ok(branch, run.stdout);
    assert.match(run.stdout, /^files changed: Makefile$/m);
    assert.match(run.stdout, /^repro: make up → exit 0; repairs \d+; playbook make-target-from-script$/m);
    assert.match(branchHead(repo.path, branch), /^[0-9a-f]{40}$/, 'the fix branch is on origin');
    const id = /^fix loop (\S+) started; waiting/m.exec(run.stdout)![1]!;
    const status = await tarmac(['status', id], { apiUrl: stack.apiUrl });
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^${id.replace(/[.]/g, '\\.')} {2}COMPLETED {2}fix loop$`, 'm'));
    assert.match(status.stdout, new RegExp(`^fix branch: ${branch}$`, 'm'));
  });

  it('an API that is not there: a clear message naming the URL, exit 1', async () => {
    const apiUrl = `http://127.0.0.1:${await freePort()}`;
    const run = await tarmac(['status', 'land.x.main.0'], { apiUrl });
    assert.equal(run.code, 1);
    assert.match(run.stderr, new RegExp(`^tarmac: cannot reach the Tarmac API at ${apiUrl.replace(/[.]/g, '\\.')} \\(ECONNREFUSED\\)`, 'm'));
    const refused = await tarmac(['status', 'land.x.main.0'], { apiUrl: stack.apiUrl, env: { TARMAC_API_TOKEN: 'not-the-right-token-123' } });
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /^tarmac: TARMAC_UNAUTHORIZED: a valid bearer token is required \(the token from TARMAC_API_TOKEN was refused\)$/m);
  });
});
