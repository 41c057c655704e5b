import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { allWaiting, holdTarget, queueRepo, releaseTarget } from '../helpers/merge-queue';
import { landingFinished, startStack, waitFor, type Stack } from '../helpers/stack';
import { literally, tarmac } from '../helpers/tarmac-cli';

const root = resolve(__dirname, '../..');
const id = (pattern: RegExp, text: string) => {
  const found = pattern.exec(text)?.[1];
  assert.ok(found, `${pattern} in:\n${text}`);
  return found;
};

/**
 * The CLI's commands beyond landing (test/e2e/cli.test.ts): help and version, list, review, watch
 * of every kind of run, logs, budget, schedule and the merge queue, each as a user runs the real binary against the
 * real stack.
 */
describe('tarmac CLI: every command, end to end', () => {
  let stack: Stack;
  const run = (args: string[], timeoutMs?: number) => tarmac(args, { apiUrl: stack.apiUrl, ...(timeoutMs ? { timeoutMs } : {}) });
  before(async () => {
    stack = await startStack();
    // A fixer that writes FIXED=1 (the gate wants 2) and reports 600 tokens a session.
    stack.scriptScenario('write-1-spend-600', { edits: [{ file: 'FIXED', replace: '1\n' }], reportUsage: { inputTokens: 400, outputTokens: 200, costUsd: 0 } });
  });
  after(async () => {
    await stack?.stop();
  });

  it('--version prints the package version; --help on every command prints its own usage with exit 0; a bad option prints that usage with exit 2', async () => {
    const version = await run(['--version']);
    assert.equal(version.code, 0, version.stderr);
    assert.equal(version.stdout, `tarmac ${(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version}\n`);

    const commands = [
      'dev',
      'worker',
      'api',
      'land',
      'list',
      'status',
      'watch',
      'logs',
      'answer',
      'cancel',
      'retry',
      'budget',
      'review',
      'fix',
      'schedule',
      'queue',
    ];
    const helps = await Promise.all(commands.map((command) => run([command, '--help'])));
    commands.forEach((command, index) => {
      const help = helps[index]!;
      assert.equal(help.code, 0, `${command} --help: ${help.stderr}`);
      assert.match(help.stdout, new RegExp(`^usage: tarmac ${command}\\b`), `${command} --help prints its usage`);
      assert.match(help.stdout, /\nexit codes: 0 /);
      assert.equal(help.stderr, '');
    });
    // `land --help` once said "Unknown option": help wins over everything else on the line.
    const landHelp = await run(['land', 'repo', 'feature/x', '--onto', 'main', '--help']);
    assert.equal(landHelp.code, 0);
    assert.equal(landHelp.stdout, helps[commands.indexOf('land')]!.stdout);
    const overview = await run(['help']);
    assert.equal(overview.code, 0);
    for (const command of commands) assert.match(overview.stdout, new RegExp(`^ {2}${command}\\b`, 'm'), `the overview lists ${command}`);
    const one = await run(['help', 'schedule']);
    assert.equal(one.stdout, helps[commands.indexOf('schedule')]!.stdout);

    const wrong = await run(['list', '--colour']);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /^tarmac: list: Unknown option '--colour'/);
    assert.match(wrong.stderr, /\n\nusage: tarmac list /, "the command's own usage follows");
    const unknown = await run(['launch']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^tarmac: unknown command "launch"/);
  });

  it('review --watch: a standalone panel followed to its verdict (exit 0); watch and status of it; list finds it by kind', async () => {
    const repo = createFixtureRepo({
      base: { 'check.sh': 'true\n' },
      branches: [{ name: 'feature/r', commits: [{ message: 'feature', files: { 'src/feature.js': 'module.exports = 1; // TODO: name it\n' } }] }],
    });
    const reviewed = await run(['review', repo.url, 'feature/r', '--base', 'main', '--panel', 'script-trio', '--watch']);
    assert.equal(reviewed.code, 0, `${reviewed.stdout}\n${reviewed.stderr}`);
    const panel = id(/^review panel (review\.\S+) started: feature\/r against main, panel script-trio$/m, reviewed.stdout);
    assert.match(reviewed.stdout, /^\[\+\d+:\d\d\] session \S+ spawned/m, "the reviewers' sessions, live from the event stream");
    assert.match(reviewed.stdout, /^verdict: approved — /m);
    assert.match(reviewed.stdout, /^panel script-trio on tree [0-9a-f]{7}: REVIEW_CACHE=miss; 3 verdict\(s\), quorum 3$/m);
    for (const reviewer of ['a', 'b', 'c']) assert.match(reviewed.stdout, new RegExp(`^ {2}✓ script#reviewer-${reviewer} delivered \\(session `, 'm'));

    const again = await run(['review', repo.url, 'feature/r', '--base', 'main', '--panel', 'script-trio']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, new RegExp(`^review panel ${literally(panel)} already exists for this tree and panel; not started again$`, 'm'));

    const watched = await run(['watch', panel]);
    assert.equal(watched.code, 0, `${watched.stdout}\n${watched.stderr}`);
    assert.match(watched.stdout, /^\[\+\d+:\d\d\] outcome approved: /m, 'the replayed journal');
    assert.match(watched.stdout, /^verdict: approved — /m);

    const status = await run(['status', panel]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^${literally(panel)} {2}COMPLETED {2}review panel$`, 'm'));
    assert.match(status.stdout, /^verdict: approved — /m);

    const listed = await run(['list', '--kind', 'review-panel', '--repo', repo.url]);
    assert.equal(listed.code, 0, listed.stderr);
    const rows = listed.stdout.trim().split('\n');
    assert.match(rows[0]!, /^ID +KIND +STATUS +PHASE +OUTCOME +TARGET +STARTED$/);
    assert.equal(rows.length, 2, listed.stdout);
    assert.match(rows[1]!, new RegExp(`^${literally(panel)} +review-panel +COMPLETED `));
    const json = await run(['list', '--kind', 'landing', '--repo', repo.url, '--json']);
    assert.deepEqual(JSON.parse(json.stdout), { runs: [] }, 'no landing on that repository');
  });

  it('fix, then watch follows the fix loop to its outcome (exit 0); logs and list by outcome and status', async () => {
    const repo = createFixtureRepo({
      base: {
        Makefile: 'test:\n\ttrue\n',
        'scripts/up.sh': 'echo services are up\n',
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', '-c', 'echo tick-1; sleep 2; echo tick-2'] }]),
      },
      branches: [{ name: 'feature/talk', commits: [{ message: 'talk', files: { 'talk.txt': 'talk\n' } }] }],
    });
    const started = await run(['fix', repo.url, 'main', 'the app does not start with make up']);
    assert.equal(started.code, 0, started.stderr);
    const loop = id(/^fix loop (\S+) started on main$/m, started.stdout);
    assert.match(started.stdout, new RegExp(`follow it with: tarmac watch ${literally(loop)}$`, 'm'));
    const watched = await run(['watch', loop]);
    assert.equal(watched.code, 0, `${watched.stdout}\n${watched.stderr}`);
    assert.match(watched.stdout, /^\[\+\d+:\d\d\] phase discover$/m);
    assert.match(watched.stdout, /^outcome: fixed — /m);
    assert.match(watched.stdout, /^fix branch: tarmac\/fix\/\S+$/m);

    // A landing whose gate talks: `logs` follows its runner log from the start to the run's end.
    const landed = await run(['land', repo.url, 'feature/talk', '--onto', 'main']);
    assert.equal(landed.code, 0, landed.stderr);
    const landing = id(/^landing (\S+) started/m, landed.stdout);
    const logs = await run(['logs', landing]);
    assert.equal(logs.code, 0, `${logs.stdout}\n${logs.stderr}`);
    const view = await stack.api('GET', `/v1/landings/${landing}`);
    assert.equal(view.body.workflowStatus, 'COMPLETED', 'logs followed the run to its end');
    const lines = logs.stdout.trim().split('\n');
    assert.ok(
      lines.every((line) => /^\S+\.log: /.test(line)),
      `only log lines:\n${logs.stdout}`,
    );
    const gateLines = lines
      .filter((line) => line.startsWith(lines.find((first) => /: tick-1$/.test(first))!.split(': ')[0]!))
      .map((line) => line.replace(/^\S+: /, ''));
    assert.deepEqual(gateLines, ['tick-1', 'tick-2'], "the gate's output, each line once, in order");
    assert.equal(branchHead(repo.path, 'main'), branchHead(repo.path, 'feature/talk'));

    const byOutcome = await run(['list', '--repo', repo.url, '--outcome', 'landed', '--json']);
    assert.deepEqual(
      (JSON.parse(byOutcome.stdout) as { runs: { id: string; kind: string }[] }).runs.map((entry) => [entry.id, entry.kind]),
      [[landing, 'landing']],
    );
    const completed = await run(['list', '--repo', repo.url, '--status', 'completed', '--json']);
    assert.deepEqual(
      (JSON.parse(completed.stdout) as { runs: { id: string }[] }).runs.map((entry) => entry.id).sort(),
      [landing, loop].sort(),
      'the landing and the fix loop, both completed',
    );
    const running = await run(['list', '--repo', repo.url, '--status', 'running']);
    assert.equal(running.code, 0, running.stderr);
    assert.equal(running.stdout, 'no runs match\n');
  });

  it('budget: one landing paused for its budget goes on after budget extend, another ends after budget stop; a finished one refuses (exit 2)', async () => {
    const budgetRepo = () =>
      createFixtureRepo({
        base: {
          'check.sh': 'test "$(cat FIXED 2>/dev/null)" = 2 || { echo "FIXED is not 2"; exit 4; }\n',
          '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { fixup: { maxRounds: 2 } }),
        },
        branches: [{ name: 'feature/b', commits: [{ message: 'feature', files: { 'feature.txt': 'b\n' } }] }],
      });
    const spender = { fixer: 'script#fixer:write-1-spend-600', ladder: ['script#fixer:write-1-spend-600'] };
    const start = async () => {
      const created = await stack.api('POST', '/v1/landings', {
        repo: budgetRepo().url,
        branches: ['feature/b'],
        target: 'main',
        agents: spender,
        budget: { tokens: 500, onExhausted: 'pause' },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body.id as string;
    };
    const [extended, stopped] = await Promise.all([start(), start()]);
    for (const landing of [extended, stopped]) {
      await waitFor(
        () => stack.api('GET', `/v1/landings/${landing}`),
        (view) => view.body?.pausedFor !== undefined || view.body?.workflowStatus !== 'RUNNING',
        180_000,
        `${landing} to pause`,
      );
    }
    const extend = await run(['budget', extended, 'extend', '--tokens', '10000', '--wall', '10m']);
    assert.equal(extend.code, 0, `${extend.stdout}\n${extend.stderr}`);
    assert.equal(extend.stdout, `budget of ${extended} extended (+10k tokens, +10 m 00 s wall time): the run goes on\n`);
    const stop = await run(['budget', stopped, 'stop']);
    assert.equal(stop.code, 0, `${stop.stdout}\n${stop.stderr}`);
    assert.equal(stop.stdout, `stop accepted: run ${stopped} ends budget-exhausted\n`);

    const stoppedEnd = await run(['watch', stopped]);
    assert.equal(stoppedEnd.code, 1, stoppedEnd.stdout);
    assert.match(
      stoppedEnd.stdout,
      new RegExp(
        `budget spent \\(tokens: 600 used of 500\\): paused — extend with: tarmac budget ${literally(stopped)} extend --tokens <n>, or stop with: tarmac budget ${literally(stopped)} stop$`,
        'm',
      ),
    );
    assert.match(stoppedEnd.stdout, /^outcome: budget-exhausted — .*stopped by an operator/m);
    const extendedEnd = await run(['watch', extended]);
    assert.equal(extendedEnd.code, 1, extendedEnd.stdout);
    assert.match(extendedEnd.stdout, /budget extended: /);
    assert.match(extendedEnd.stdout, /^outcome: fixup-failed — /m, 'the second fixup round ran after the extension (the fixer still writes 1)');
    const [view, other] = await Promise.all([stack.api('GET', `/v1/landings/${extended}`), stack.api('GET', `/v1/landings/${stopped}`)]);
    assert.equal(view.body.budget.tokens, 10_500);
    assert.equal(view.body.budget.wallMs, other.body.budget.wallMs + 600_000, 'the wall time was extended by 10m too');

    const late = await run(['budget', extended, 'extend', '--tokens', '5']);
    assert.equal(late.code, 2);
    assert.match(late.stderr, new RegExp(`^tarmac: TARMAC_CONFLICT: run ${literally(extended)} is not running \\(COMPLETED\\)`, 'm'));
  });

  it('schedule: create (paused), list, show, trigger (the nightly runs green), delete; watch of a nightly is refused (no event stream)', async () => {
    const repo = createFixtureRepo({ base: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['true'] }]) } });
    const created = await run(['schedule', 'create', repo.url, 'main', '--cron', '30 2 * * *', '--timezone', 'Europe/Paris', '--paused']);
    assert.equal(created.code, 0, created.stderr);
    const schedule = id(/^schedule created: (nightly\.\S+) \(paused\)$/m, created.stdout);
    assert.match(created.stdout, /^ {2}every "30 2 \* \* \*" \(Europe\/Paris\) on main; next run: \S+$/m);
    const conflict = await run(['schedule', 'create', repo.url, 'main', '--cron', '0 4 * * *']);
    assert.equal(conflict.code, 2);
    assert.match(conflict.stderr, /^tarmac: TARMAC_CONFLICT: .*already has nightly schedule/m);

    const listed = await run(['schedule', 'list']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^${literally(schedule)} +main +30 2 \\* \\* \\* +Europe/Paris +paused +\\S+$`, 'm'));

    const triggered = await run(['schedule', 'trigger', schedule]);
    assert.equal(triggered.code, 0, triggered.stderr);
    assert.match(triggered.stdout, new RegExp(`^schedule ${literally(schedule)} triggered: a nightly run starts now$`, 'm'));
    const done = await waitFor(
      () => stack.api('GET', `/v1/schedules/${schedule}`),
      (view) => view.body?.recentRuns?.[0]?.workflowStatus === 'COMPLETED',
      240_000,
      'the nightly run',
    );
    const nightly = done.body.recentRuns[0].workflowId as string;
    const shown = await run(['schedule', 'show', schedule]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`^${literally(schedule)} {2}paused`, 'm'));
    assert.match(shown.stdout, /^cron: 30 2 \* \* \* \(Europe\/Paris\)$/m);
    assert.match(shown.stdout, new RegExp(`^ {2}${literally(nightly)} {2}COMPLETED {2}\\S+ {2}green`, 'm'), 'the run and its outcome');

    const watched = await run(['watch', nightly]);
    assert.equal(watched.code, 2);
    assert.match(watched.stderr, new RegExp(`^tarmac: run ${literally(nightly)} is a nightly run, which has no event stream`, 'm'));
    const listedNightly = await run(['list', '--kind', 'nightly', '--repo', repo.url, '--json']);
    assert.deepEqual(
      (JSON.parse(listedNightly.stdout) as { runs: { id: string }[] }).runs.map((entry) => entry.id),
      [nightly],
    );

    const deleted = await run(['schedule', 'delete', schedule]);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, new RegExp(`^schedule ${literally(schedule)} deleted`, 'm'));
    const gone = await run(['schedule', 'show', schedule]);
    assert.equal(gone.code, 2);
    assert.match(gone.stderr, new RegExp(`^tarmac: TARMAC_NOT_FOUND: no schedule ${literally(schedule)}$`, 'm'));
  });

  it('queue: the holder and the line by lane with ETAs (land --priority), every running queue; the batch that lands them (status, list --kind merge-batch)', async () => {
    const repo = queueRepo(['a', 'c']);
    // A first landing alone (a file outside features/: the pacer still holds the target later): the queue times one turn, so the line gets ETAs.
    repo.git('checkout', '--quiet', '-B', 'feature/warm', 'main');
    writeFileSync(join(repo.clone, 'warm'), 'warm\n');
    repo.git('add', 'warm');
    repo.git('commit', '--quiet', '-m', 'warm up');
    repo.git('push', '--quiet', 'origin', 'feature/warm');
    repo.git('checkout', '--quiet', 'main');
    const warm = await run(['land', repo.url, 'feature/warm', '--onto', 'main', '--watch', '--plain'], 240_000);
    assert.equal(warm.code, 0, `${warm.stdout}\n${warm.stderr}`);
    repo.git('pull', '--quiet', '--ff-only', 'origin', 'main');

    const pacer = await holdTarget(stack, repo);
    const started = async (args: string[]) => {
      const result = await run(['land', repo.url, ...args, '--onto', 'main', '--json']);
      assert.equal(result.code, 0, result.stderr);
      return (JSON.parse(result.stdout) as { id: string }).id;
    };
    const low = await started(['feature/c']);
    const high = await started(['feature/a', '--priority', '5']);
    const refused = await run(['land', repo.url, 'feature/a', '--onto', 'main', '--priority', '101']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /^tarmac: land: --priority must be a whole number from -100 to 100, not "101"$/m);
    await allWaiting(stack, pacer, [low, high]);

    // The one queue: the pacer holds the target (merging itself, or in a batch of its own); the later landing goes first in
    // its higher lane; both may be batched; each has an ETA.
    const shown = await run(['queue', repo.url, 'main']);
    assert.equal(shown.code, 0, shown.stderr);
    const lines = shown.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, new RegExp(`^queue queue\\.\\S+: main of ${literally(repo.url)}$`));
    const holder = lines.slice(1, lines.indexOf('waiting: 2')).join('\n');
    assert.match(
      holder,
      new RegExp(
        `^(holds the target: ${literally(pacer)} \\(for [^)]+\\)|batch in flight: \\S+\\.batch-\\d+ \\(for [^)]+\\)\n {2}members: ${literally(pacer)})$`,
      ),
      shown.stdout,
    );
    const line = lines.slice(lines.indexOf('waiting: 2') + 1);
    assert.match(line[0]!, /^ {2}POS +LANDING +LANE +BATCHABLE +ETA$/);
    assert.match(line[1]!, new RegExp(`^ {2}0 +${literally(high)} +\\+5 +yes +~\\d`));
    assert.match(line[2]!, new RegExp(`^ {2}1 +${literally(low)} +0 +yes +~\\d`));
    assert.match(line[3]!, /^admitted \d+ · batches \d+ · a turn takes [^(]+ \(median of the last \d+\)$/);
    const json = JSON.parse((await run(['queue', repo.url, 'main', '--json'])).stdout) as {
      current?: string;
      batch?: { members: string[] };
      waiting: { landingId: string; lane: number; etaMs?: number }[];
      recentTurnMs: number[];
    };
    assert.ok(json.current === pacer || json.batch?.members.includes(pacer), JSON.stringify(json));
    assert.deepEqual(
      json.waiting.map((entry) => [entry.landingId, entry.lane]),
      [
        [high, 5],
        [low, 0],
      ],
    );
    assert.ok(
      json.waiting.every((entry) => typeof entry.etaMs === 'number' && entry.etaMs > 0),
      JSON.stringify(json.waiting),
    );
    assert.ok(json.recentTurnMs.length >= 1, 'the warm-up landing’s turn was timed');

    // Every queue that runs: this one with its holder and line.
    const all = await run(['queue']);
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, /^TARGET +HOLDER +WAITING +NEXT ETA +ADMITTED +BATCHES +REPO$/m);
    assert.match(
      all.stdout,
      new RegExp(`^main +(?:${literally(pacer)}|batch \\S+\\.batch-\\d+) +2 +~(?:\\d+ m \\d+ s|[0-9.]+ s) +\\d+ +\\d+ +${literally(repo.url)}$`, 'm'),
    );
    const half = await run(['queue', repo.url]);
    assert.equal(half.code, 2);
    assert.match(half.stderr, /^tarmac: queue: missing <target>/);
    const badTarget = await run(['queue', repo.url, 'no..such']);
    assert.equal(badTarget.code, 2);
    assert.match(badTarget.stderr, /^tarmac: TARMAC_VALIDATION: target /m);

    // The pacer gives the target back: the two land together in one batch, which status and list show.
    await releaseTarget(stack, pacer);
    const views = await Promise.all([high, low].map((landing) => landingFinished(stack, landing, 300_000)));
    for (const view of views) assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const batchId = views[0].outcome.batch?.id as string;
    assert.ok(batchId, JSON.stringify(views[0].outcome));
    assert.equal(views[1].outcome.batch?.id, batchId, 'one batch');
    const landed = await run(['status', high]);
    assert.match(
      landed.stdout,
      new RegExp(
        `^batch: merged in ${literally(batchId)}, gate round 1 on tree [0-9a-f]{7} \\(its commit [0-9a-f]{7}\\); merged together: ${literally(high)}, ${literally(low)}$`,
        'm',
      ),
    );
    const batch = await run(['status', batchId]);
    assert.equal(batch.code, 0, batch.stderr);
    assert.match(batch.stdout, new RegExp(`^${literally(batchId)} {2}COMPLETED {2}merge batch$`, 'm'));
    assert.match(batch.stdout, /^outcome: 2 of 2 landed in 1 fast-forward\(s\) after 1 gate round\(s\)$/m);
    for (const member of [high, low]) assert.match(batch.stdout, new RegExp(`^ {2}✓ ${literally(member)} landed \\(round 1, tree [0-9a-f]{7}\\)$`, 'm'));
    assert.match(batch.stdout, /^round 1: the first 2 stacked on tree [0-9a-f]{7} ✓ green$/m);
    assert.match(batch.stdout, /^merged: main [0-9a-f]{7} → [0-9a-f]{7} \(round 1: /m);
    const batches = await run(['list', '--kind', 'merge-batch', '--repo', repo.url]);
    assert.equal(batches.code, 0, batches.stderr);
    assert.match(batches.stdout, new RegExp(`^${literally(batchId)} +merge-batch +COMPLETED +- +- +main `, 'm'));
  });
});
