import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RetentionReport } from '../../activities/janitor/retention';
import { mirrorPath } from '../../activities/stores/run-store';
import { createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { retentionScheduleId } from '../../worker/retention-schedule';
import { startStack, waitFor, type Stack } from '../helpers/stack';

/** A finished run older than this is removed by the sweep this test triggers. */
const retentionMs = 20_000;

const base = {
  Makefile: 'test:\n\tnode test.js\n',
  'value.js': 'module.exports = 1;\n',
  'test.js': "if (require('./value.js') < 1) process.exit(1);\nconsole.log('suite ok');\n",
  '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'], timeout: '2m' }]),
};
const bump = (name: string, value: number) => [
  { name, commits: [{ message: `${name}: value ${value}`, files: { 'value.js': `module.exports = ${value};\n` } }] },
];

async function land(stack: Stack, repoUrl: string, branch: string): Promise<string> {
  const created = await stack.api('POST', '/v1/landings', { repo: repoUrl, branches: [branch], target: 'main' });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.id as string;
}

async function finished(stack: Stack, id: string): Promise<any> {
  const view = await waitFor(
    () => stack.api('GET', `/v1/landings/${id}`),
    (response) => response.status === 200 && response.body.workflowStatus !== 'RUNNING',
    180_000,
    `landing ${id} to finish`,
  );
  return view.body;
}

describe('retention: a schedule per host removes finished runs older than TARMAC_RETENTION, and nothing else', () => {
  let stack: Stack;
  /** The landing left waiting on its question: ended before the stack stops, even when an assertion failed (no container left). */
  let waiting: string | undefined;
  const outside = mkdtempSync(join(tmpdir(), 'tarmac-retention-outside-'));
  before(async () => {
    // Swept once a year by the schedule itself (never during the test): the test triggers the sweep when its runs are in place.
    stack = await startStack({ workerEnv: { TARMAC_RETENTION: `${retentionMs / 1000}s`, TARMAC_RETENTION_EVERY: '8760h' } });
  });
  after(async () => {
    if (waiting) {
      await stack.api('POST', `/v1/landings/${waiting}/cancel`).catch(() => undefined);
      await finished(stack, waiting).catch(() => undefined);
    }
    await stack?.stop();
    rmSync(outside, { recursive: true, force: true });
  });

  it('removes old finished runs, their unused mirror and old cache entries; keeps a running run, a young run and everything not Tarmac’s', async () => {
    // The host's worker made its schedule, with the configured retention.
    const schedule = stack.client.schedule.getHandle(retentionScheduleId('test-host'));
    const description = await schedule.describe();
    assert.equal(description.action.type, 'startWorkflow');
    assert.equal(description.action.type === 'startWorkflow' && description.action.workflowType, 'retentionSweep');
    assert.deepEqual(description.action.type === 'startWorkflow' && description.action.args, [{ hostId: 'test-host', retentionMs }]);
    assert.equal(description.spec.intervals?.[0]?.every, 8760 * 3_600_000);

    // A run on a repository of its own: when it is removed, nothing uses its mirror any more.
    const lone = createFixtureRepo({ base, branches: bump('feature/lone', 2) });
    const loneId = await land(stack, lone.url, 'feature/lone');
    // A landing that waits on a question (its branch changes the gate file): running, and the oldest of all.
    const repo = createFixtureRepo({
      base,
      branches: [
        {
          name: 'feature/gate',
          commits: [
            { message: 'gate: another timeout', files: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'], timeout: '3m' }]) } },
          ],
        },
        ...bump('feature/old', 2),
        // Another file than feature/old's: it rebases onto it cleanly.
        { name: 'feature/young', commits: [{ message: 'notes: young', files: { 'notes.txt': 'young\n' } }] },
      ],
    });
    const runningId = await land(stack, repo.url, 'feature/gate');
    waiting = runningId;
    await waitFor(
      () => stack.api('GET', `/v1/landings/${runningId}`),
      (response) => response.body.pendingQuestions?.length === 1,
      120_000,
      'the question',
    );
    assert.equal((await finished(stack, loneId)).outcome.status, 'landed');
    const oldId = await land(stack, repo.url, 'feature/old');
    const old = (await finished(stack, oldId)).outcome;
    assert.equal(old.status, 'landed');

    // What a sweep must never touch: a link out of an old run, a directory an old run's manifest
    // names outside the data dir, a directory among the runs with no manifest, a file among the mirrors.
    const sentinel = join(outside, 'keep-me.txt');
    writeFileSync(sentinel, 'not Tarmac’s\n');
    const outsideDir = join(outside, 'listed-in-a-manifest');
    mkdirSync(outsideDir);
    writeFileSync(join(outsideDir, 'data.txt'), 'listed, but outside the data dir\n');
    symlinkSync(outside, join(stack.dataDir, 'runs', oldId, 'link-out'));
    const manifestPath = join(stack.dataDir, 'runs', oldId, 'manifest.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    writeFileSync(manifestPath, JSON.stringify({ ...manifest, dirs: [...manifest.dirs, outsideDir], worktrees: [...manifest.worktrees, outside] }, null, 2));
    const foreign = join(stack.dataDir, 'runs', 'not-a-run');
    mkdirSync(foreign);
    writeFileSync(join(foreign, 'notes.txt'), 'someone else’s\n');
    writeFileSync(join(stack.dataDir, 'mirrors', 'README.txt'), 'not a mirror\n');
    // Findings-cache entries: one last used long ago (and one just before the sweep, below).
    const tree = 'ab'.repeat(20);
    const cacheDir = join(stack.dataDir, 'cache', 'reviews', 'ab', tree);
    mkdirSync(cacheDir, { recursive: true });
    writeFileSync(join(cacheDir, 'script#reviewer@v-old.json'), '{}\n');
    const longAgo = new Date(Date.now() - 10 * 24 * 3_600_000);
    utimesSync(join(cacheDir, 'script#reviewer@v-old.json'), longAgo, longAgo);
    // The old runs age past the retention; then a young run finishes, just before the sweep.
    await new Promise((resolve) => setTimeout(resolve, retentionMs + 1_000));
    const youngId = await land(stack, repo.url, 'feature/young');
    const young = (await finished(stack, youngId)).outcome;
    assert.equal(young.status, 'landed');
    writeFileSync(join(cacheDir, 'script#reviewer@v-new.json'), '{}\n');

    // The schedule's sweep, now (the same action it takes every TARMAC_RETENTION_EVERY).
    const taken = (await schedule.describe()).info.recentActions.length;
    await schedule.trigger();
    const action = await waitFor(
      () => schedule.describe(),
      (now) => now.info.recentActions.length > taken,
      30_000,
      'the triggered sweep',
    );
    const started = action.info.recentActions.at(-1)!.action.workflow;
    const report = (await stack.client.workflow.getHandle(started.workflowId, started.firstExecutionRunId).result()) as RetentionReport;
    console.log(`retention sweep: removed ${report.removed.length} (${report.bytesFreed} bytes), kept runs ${JSON.stringify(report.keptRuns)}`);

    const removedRuns = report.removed
      .filter((entry) => entry.kind === 'run')
      .map((entry) => entry.runId)
      .sort();
    assert.deepEqual(removedRuns, [loneId, oldId].sort(), 'the two finished runs older than the retention');
    for (const id of [loneId, oldId]) assert.equal(existsSync(join(stack.dataDir, 'runs', id)), false, `runs/${id} is gone`);
    const kept = new Map(report.keptRuns.map((entry) => [entry.runId, entry.reason]));
    assert.equal(kept.get(runningId), 'running', 'the running landing is kept, however old');
    assert.match(kept.get(youngId) ?? '', /^completed \d+ s ago: younger than the retention/);
    assert.match(kept.get('not-a-run') ?? '', /no manifest/);
    for (const id of [runningId, youngId]) assert.ok(existsSync(join(stack.dataDir, 'runs', id, 'manifest.json')), `runs/${id} is still there`);
    assert.ok(existsSync(join(foreign, 'notes.txt')));

    // Mirrors: the lone repository's went with its last run; the shared one is used by the running landing.
    const removedMirrors = report.removed.filter((entry) => entry.kind === 'mirror').map((entry) => entry.path);
    assert.deepEqual(removedMirrors, [join('mirrors', mirrorPath(stack.dataDir, lone.url).split('/').pop()!)]);
    assert.equal(existsSync(mirrorPath(stack.dataDir, lone.url)), false);
    assert.ok(existsSync(mirrorPath(stack.dataDir, repo.url)), 'the mirror the running landing uses is kept');
    assert.ok(existsSync(join(stack.dataDir, 'mirrors', 'README.txt')));
    // The findings cache: the old entry went, the fresh one stayed.
    assert.deepEqual(
      report.removed.filter((entry) => entry.kind === 'review-cache').map((entry) => entry.path),
      [join('cache', 'reviews', 'ab', tree, 'script#reviewer@v-old.json')],
    );
    assert.ok(existsSync(join(cacheDir, 'script#reviewer@v-new.json')));
    // The gate cache: the entry and log sealed for the old runs' tree (the lone run's tree too: it sealed, the old run reused) went; the young run's stayed.
    const gateEntry = (treeSha: string) => join('cache', 'gates', treeSha.slice(0, 2), treeSha, 'test');
    const removedGate = report.removed.filter((entry) => entry.kind === 'gate-cache').map((entry) => entry.path);
    assert.deepEqual(removedGate.map((path) => path.slice(path.lastIndexOf('.'))).sort(), ['.json', '.log'], JSON.stringify(removedGate));
    for (const path of removedGate) assert.ok(path.startsWith(`${gateEntry(old.treeSha)}/`), path);
    assert.equal(existsSync(join(stack.dataDir, gateEntry(old.treeSha))), false, 'its emptied directories went too');
    assert.equal(readdirSync(join(stack.dataDir, gateEntry(young.treeSha))).length, 2, "the young run's entry and log are kept");

    // Nothing outside the data dir, even listed in a manifest or linked from a run.
    assert.equal(readFileSync(sentinel, 'utf8'), 'not Tarmac’s\n');
    assert.ok(existsSync(join(outsideDir, 'data.txt')));
    assert.ok(existsSync(join(stack.dataDir, 'temporal.db')), 'the data dir’s own files stay');
    assert.deepEqual(report.problems, []);

    // What was removed, when and why: the host's retention log, one line per removal.
    const logged = readFileSync(join(stack.dataDir, 'retention.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.deepEqual(logged.map((line) => line.path).sort(), report.removed.map((entry) => entry.path).sort());
    for (const line of logged) {
      assert.equal(line.hostId, 'test-host');
      assert.ok(!Number.isNaN(Date.parse(line.at)) && !Number.isNaN(Date.parse(line.finishedAt)), 'each line says when');
      assert.match(line.reason, /older than the retention|no kept run uses it|not used for/);
    }
    const oldLine = logged.find((line) => line.runId === oldId);
    assert.equal(oldLine.status, 'COMPLETED');
    assert.ok(oldLine.bytes > 0, 'how much was freed');
    // The operator's view through the API (from Temporal: any host, whatever disk the API is on).
    const view = await stack.api('GET', '/v1/retention');
    assert.equal(view.status, 200, JSON.stringify(view.body));
    const host = view.body.hosts.find((entry: { hostId: string }) => entry.hostId === 'test-host');
    assert.deepEqual([host.scheduleId, host.retentionMs, host.everyMs, host.paused], [retentionScheduleId('test-host'), retentionMs, 8760 * 3_600_000, false]);
    assert.equal(host.nextRuns.length > 0, true, 'when it sweeps next');
    const sweep = host.recentSweeps.find((entry: { workflowId: string }) => entry.workflowId === started.workflowId);
    assert.equal(sweep.workflowStatus, 'COMPLETED');
    assert.deepEqual(sweep.report.removed.map((entry: { path: string }) => entry.path).sort(), report.removed.map((entry) => entry.path).sort());
    assert.equal(sweep.report.removedCount, report.removed.length);
    assert.equal(sweep.report.bytesFreed, report.bytesFreed);
    assert.deepEqual(
      sweep.report.keptRuns.find((entry: { runId: string }) => entry.runId === runningId),
      { runId: runningId, reason: 'running' },
    );
    assert.equal((await stack.api('GET', '/v1/retention', undefined, null)).status, 401);

    // Temporal still has the removed runs' records: the API answers for them.
    const oldView = await stack.api('GET', `/v1/landings/${oldId}`);
    assert.equal(oldView.body.outcome.status, 'landed');

    // The waiting landing ends (an empty answer: needs-decision) and goes on as any other run.
    const answered = await stack.api('POST', `/v1/landings/${runningId}/answers`, { text: '' });
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    assert.equal((await finished(stack, runningId)).outcome.status, 'needs-decision');
    waiting = undefined;
  });
});
