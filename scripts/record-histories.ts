/**
 * `npm run record:histories [kind ...]`: runs one small run of every workflow kind on the real stack
 * (test/helpers/stack.ts: a Temporal dev server, the worker, the API, Docker, scripted agents) and
 * writes each run's history, its children's with it, to test/fixtures/histories/<kind>.json, which
 * the unit tier replays against today's workflow code (test/unit/replay.test.ts). Also records the
 * replay demo's two histories (test/fixtures/replay-demo/). Takes a few minutes; run it when a
 * patch is retired or a workflow gains a path the fixtures do not cover (docs/VERSIONING.md).
 * With kinds named, only those are recorded.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { quarantineSuite } from '../activities/stores/quarantine';
import { targetQueueId } from '../activities/stores/queue';
import { suiteQuarantineId } from '../core/node/quarantine-id';
import { liftQuarantineUpdate } from '../core/quarantine';
import { createFixtureRepo, gateFile, type Files } from '../infra/fixture-repo';
import { agentRegistryId } from '../workflows/agent-registry';
import { historiesDir, replayDemoDir, type HistoryFixture, type Provenance, type RecordedWorkflow } from '../test/helpers/history-fixture';
import { historyToJson } from '../test/helpers/history-json';
import { allWaiting, holdTarget, queueRepo, releaseTarget, startLanding } from '../test/helpers/merge-queue';
import { landingFinished, startStack, waitFor, type Stack } from '../test/helpers/stack';
import { retentionScheduleId } from '../worker/retention-schedule';
import { repositoryRoot, workflowSourceKey } from '../worker/workflow-bundle';

interface Recording {
  kind: string;
  description: string;
  /** Runs it; returns the ids of the workflows to record (each with its children). */
  run(stack: Stack): Promise<string[]>;
}

/** What the script reads of the API's answers. */
interface Created {
  id: string;
}
interface RunView {
  workflowStatus?: string;
  outcome?: { status: string; summary?: string };
  pendingQuestions?: unknown[];
}
interface ScheduleView {
  recentRuns?: { workflowId: string; workflowStatus: string; outcome?: { status: string } }[];
}

/** The stack's API call, its body read as `T`. */
async function call<T>(stack: Stack, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await stack.api(method, path, body);
  return { status: response.status, body: response.body as T };
}

const gate = (extra: Record<string, unknown> = {}) => gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], extra);

async function land(stack: Stack, body: Record<string, unknown>): Promise<string> {
  const created = await call<Created>(stack, 'POST', '/v1/landings', body);
  if (created.status !== 201) throw new Error(`POST /v1/landings: ${created.status} ${JSON.stringify(created.body)}`);
  return created.body.id;
}

async function landed(stack: Stack, id: string, expected = 'landed'): Promise<void> {
  const view = (await landingFinished(stack, id)) as RunView;
  if (view.outcome?.status !== expected) throw new Error(`${id}: ${view.outcome?.status} (${view.outcome?.summary}), expected ${expected}`);
}

async function runCompleted(stack: Stack, path: string, body: Record<string, unknown>): Promise<string> {
  const created = await call<Created>(stack, 'POST', path, body);
  if (created.status !== 201) throw new Error(`POST ${path}: ${created.status} ${JSON.stringify(created.body)}`);
  const id = created.body.id;
  await waitFor(
    () => call<RunView>(stack, 'GET', `/v1/runs/${id}`),
    (response) => response.body?.workflowStatus === 'COMPLETED',
    240_000,
    `run ${id}`,
  );
  return id;
}

const recordings: Recording[] = [
  {
    kind: 'landing-conflict',
    description: 'a branch that conflicts with a moved target: the scripted resolver resolves the rebase; gated, verified, merged',
    async run(stack) {
      const repo = createFixtureRepo({
        base: { 'shared.txt': 'base\n', 'check.sh': 'test -f shared.txt\n', '.config/tarmac/land-gate.json': gate() },
        branches: [{ name: 'feature/one', commits: [{ message: 'one: change shared', files: { 'shared.txt': 'one\n' } }] }],
      });
      repo.advanceTarget('target changes shared', { 'shared.txt': 'target\n' });
      const id = await land(stack, {
        repo: repo.url,
        branches: ['feature/one'],
        target: 'main',
        agents: { resolver: 'script#resolver', ladder: ['script#resolver'] },
      });
      await landed(stack, id);
      return [id];
    },
  },
  {
    kind: 'landing-fixup',
    description: 'a red gate → a fixup round (a child fix loop whose scripted fixer writes the fix) → a green re-gate → merged',
    async run(stack) {
      stack.scriptScenario('write-fixed', { edits: [{ file: 'FIXED', replace: 'yes\n' }] });
      const repo = createFixtureRepo({
        base: { 'check.sh': 'test -f FIXED || { echo "FIXED is missing"; exit 4; }\n', '.config/tarmac/land-gate.json': gate() },
        branches: [{ name: 'feature/f', commits: [{ message: 'feature without the fix', files: { 'feature.txt': 'f\n' } }] }],
      });
      const id = await land(stack, {
        repo: repo.url,
        branches: ['feature/f'],
        target: 'main',
        agents: { fixer: 'script#fixer:write-fixed', ladder: ['script#fixer:write-fixed'] },
      });
      await landed(stack, id);
      return [id];
    },
  },
  {
    kind: 'landing-review',
    description: "a green gate, then the gate file's review panel (three scripted reviewers, a cache miss) approves; merged",
    async run(stack) {
      const repo = createFixtureRepo({
        base: { 'check.sh': 'true\n', '.config/tarmac/land-gate.json': gate({ review: { panel: 'script-trio', quorum: 3 } }) },
        branches: [{ name: 'feature/r', commits: [{ message: 'feature', files: { 'src/recorded.js': 'module.exports = 11;\n' } }] }],
      });
      const id = await land(stack, { repo: repo.url, branches: ['feature/r'], target: 'main' });
      await landed(stack, id);
      return [id];
    },
  },
  {
    kind: 'landing-question',
    description: 'a branch that edits the gate file: the landing asks, waits, is answered "approved" through the API, and merges',
    async run(stack) {
      const repo = createFixtureRepo({
        base: { 'check.sh': 'true\n', '.config/tarmac/land-gate.json': gate() },
        branches: [
          {
            name: 'feature/gate',
            commits: [{ message: 'loosen the gate', files: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['true'] }]) } }],
          },
        ],
      });
      const id = await land(stack, { repo: repo.url, branches: ['feature/gate'], target: 'main' });
      await waitFor(
        () => call<RunView>(stack, 'GET', `/v1/landings/${id}`),
        (view) => view.body?.pendingQuestions?.length === 1,
        120_000,
        'the question',
      );
      const answered = await stack.api('POST', `/v1/landings/${id}/answers`, { text: 'approved' });
      if (answered.status !== 200) throw new Error(`answer: ${answered.status} ${JSON.stringify(answered.body)}`);
      await landed(stack, id);
      return [id];
    },
  },
  {
    kind: 'review-panel',
    description: 'POST /v1/reviews: a panel on its own (three scripted reviewers) finds a blocking `debugger;`',
    async run(stack) {
      const repo = createFixtureRepo({
        base: { 'README.md': '# recorded\n' },
        branches: [{ name: 'feature/r', commits: [{ message: 'feature', files: { 'src/debug.js': 'debugger;\n' } }] }],
      });
      return [await runCompleted(stack, '/v1/reviews', { repo: repo.url, base: 'main', head: 'feature/r', panel: 'script-trio' })];
    },
  },
  {
    kind: 'fix-loop',
    description: 'POST /v1/fix-loops: a failing test, fixed in the source by a scripted agent; the repro passes',
    async run(stack) {
      stack.scriptScenario('fix-max', { edits: [{ file: 'src/max.js', find: 'a < b', replace: 'a > b' }] });
      const files: Files = {
        Makefile: 'test:\n\tnode test.js\n',
        'src/max.js': 'module.exports = (a, b) => (a < b ? a : b);\n',
        'test.js': "const max = require('./src/max.js');\nif (max(2, 5) !== 5) { console.error('max(2, 5) should be 5'); process.exit(1); }\n",
      };
      const repo = createFixtureRepo({ base: files });
      const body = {
        repo: repo.url,
        branch: 'main',
        request: 'the unit test for max fails',
        agents: { implementer: 'script#fixer:fix-max', ladder: ['script#fixer:fix-max'] },
      };
      return [await runCompleted(stack, '/v1/fix-loops', body)];
    },
  },
  {
    kind: 'nightly',
    description: 'a schedule triggered once: the target gate is red, a child fix loop repairs it with a playbook, a child landing lands the repair',
    async run(stack) {
      const repo = createFixtureRepo({
        base: {
          '.config/tarmac/land-gate.json': gateFile([{ id: 'smoke', run: ['make', 'smoke'] }]),
          Makefile: 'test:\n\ttrue\n',
          'scripts/smoke.sh': 'echo smoke ok\n',
        },
      });
      const created = await call<Created>(stack, 'POST', '/v1/schedules', { repo: repo.url, target: 'main' });
      if (created.status !== 201) throw new Error(`POST /v1/schedules: ${created.status} ${JSON.stringify(created.body)}`);
      const scheduleId = created.body.id;
      const triggered = await stack.api('POST', `/v1/schedules/${scheduleId}/trigger`);
      if (triggered.status !== 202) throw new Error(`trigger: ${triggered.status}`);
      const view = await waitFor(
        () => call<ScheduleView>(stack, 'GET', `/v1/schedules/${scheduleId}`),
        (response) => ['COMPLETED', 'FAILED', 'TERMINATED', 'TIMED_OUT'].includes(response.body?.recentRuns?.[0]?.workflowStatus ?? ''),
        480_000,
        'the nightly run',
      );
      const run = view.body.recentRuns![0]!;
      if (run.workflowStatus !== 'COMPLETED' || run.outcome?.status !== 'repaired') throw new Error(`nightly: ${JSON.stringify(run)}`);
      await stack.api('DELETE', `/v1/schedules/${scheduleId}`);
      return [run.workflowId];
    },
  },
  {
    kind: 'target-queue',
    description:
      "two landings onto one target at once: the queue admits one (update-with-start), the other waits for `admitted`, is re-gated on the first's merge and merges; the queue's history (still running) and both landings",
    async run(stack) {
      const repo = createFixtureRepo({
        base: { 'check.sh': 'sleep 2\n', '.config/tarmac/land-gate.json': gate() },
        branches: [
          { name: 'feature/x', commits: [{ message: 'x', files: { 'x.txt': 'x\n' } }] },
          { name: 'feature/y', commits: [{ message: 'y', files: { 'y.txt': 'y\n' } }] },
        ],
      });
      const ids = await Promise.all(['feature/x', 'feature/y'].map((branch) => land(stack, { repo: repo.url, branches: [branch], target: 'main' })));
      for (const id of ids) await landed(stack, id);
      return [targetQueueId(repo.url, 'main'), ...ids];
    },
  },
  {
    kind: 'merge-batch',
    description:
      'the target queue (batch size 4) and its batches: a pacer landing holds the target in a batch of one until all four wait, then is cancelled (its batch drops it); a batch of four with one bad landing: bisected in three rounds (4 red, 2 green, 3 green), three land in one fast-forward, the culprit gets its fixup round and lands after; the batch, the queue and the culprit',
    async run(stack) {
      stack.scriptScenario('write-fixed', { edits: [{ file: 'FIXED', replace: 'yes\n' }] });
      const repo = queueRepo(['a1', 'a2', 'a3', 'b']);
      const pacer = await holdTarget(stack, repo);
      const good: string[] = [];
      for (const name of ['a1', 'a2', 'a3']) good.push(await startLanding(stack, repo, `feature/${name}`));
      const bad = await startLanding(stack, repo, 'feature/b', {
        priority: -1,
        agents: { fixer: 'script#fixer:write-fixed', ladder: ['script#fixer:write-fixed'] },
      });
      await allWaiting(stack, pacer, [...good, bad]);
      await releaseTarget(stack, pacer);
      for (const id of [...good, bad]) await landed(stack, id);
      const view = (await landingFinished(stack, good[0]!)) as { outcome: { batch: { id: string } } };
      // The queue (still running) with its batches — the pacer's, cancelled under it, and the bisected one — and the culprit.
      return [targetQueueId(repo.url, 'main'), view.outcome.batch.id, bad];
    },
  },
  {
    kind: 'landing-flaky',
    description:
      'a suite red on its first run and green when run again on the identical tree (TARMAC_GATE_ATTEMPT): the red round settled by evidence (quarantines asked, the base run too), flaky, retried under the shipped recipe; merged',
    async run(stack) {
      const repo = createFixtureRepo({
        base: {
          'check.sh': 'if [ "$TARMAC_GATE_ATTEMPT" = 1 ]; then echo "first run: fails"; exit 3; fi\necho "run again: passes"\n',
          '.config/tarmac/land-gate.json': gate(),
        },
        branches: [{ name: 'feature/flaky', commits: [{ message: 'feature', files: { 'flaky.txt': 'f\n' } }] }],
      });
      const id = await land(stack, { repo: repo.url, branches: ['feature/flaky'], target: 'main' });
      await landed(stack, id);
      return [id];
    },
  },
  {
    kind: 'landing-finish-on-host',
    description:
      'a plain landing after patch landing-finish-on-host: green gate, admitted at once, merged, and ended by capsule.finishRun on its host in the same workflow task (the cleanup left to the host janitor)',
    async run(stack) {
      const repo = createFixtureRepo({
        base: { 'check.sh': 'echo ok\n', '.config/tarmac/land-gate.json': gate() },
        branches: [{ name: 'feature/plain', commits: [{ message: 'feature', files: { 'plain.txt': 'p\n' } }] }],
      });
      const id = await land(stack, { repo: repo.url, branches: ['feature/plain'], target: 'main' });
      await landed(stack, id);
      return [id];
    },
  },
  {
    kind: 'suite-quarantine',
    description:
      "one target's quarantine entity: started by a quarantine (update-with-start), a second suite quarantined and lifted, the first dropped at its end by the entity's timer; with none left it ends",
    async run(stack) {
      const [repo, target] = ['file:///recorded/quarantine.git', 'main'];
      const request = (suiteId: string, forMs: number) => ({
        suiteId,
        forMs,
        settled: 'flaky' as const,
        landingId: 'land.recorded',
        treeSha: 'a'.repeat(40),
        logRefs: [`runs/land.recorded/logs/gate-${suiteId}.log`],
      });
      await quarantineSuite(stack.client, stack.config.taskQueue, repo, target, request('lint', 3_000));
      await quarantineSuite(stack.client, stack.config.taskQueue, repo, target, request('test', 600_000));
      const handle = stack.client.workflow.getHandle(suiteQuarantineId(repo, target));
      const { lifted } = await handle.executeUpdate(liftQuarantineUpdate, { args: [{ suiteId: 'test' }] });
      if (!lifted) throw new Error('the quarantine of test was not lifted');
      await handle.result();
      return [handle.workflowId];
    },
  },
  {
    kind: 'retention-sweep',
    description: "the stack host's retention schedule triggered once: one sweep of its data dir (nothing old enough to remove)",
    async run(stack) {
      const schedule = stack.client.schedule.getHandle(retentionScheduleId(stack.config.hostId));
      await schedule.trigger();
      const described = await waitFor(
        () => schedule.describe(),
        (description) => description.info.recentActions.length > 0,
        60_000,
        'the sweep to start',
      );
      const workflowId = described.info.recentActions[0]!.action.workflow.workflowId;
      await stack.client.workflow.getHandle(workflowId).result();
      return [workflowId];
    },
  },
  {
    kind: 'agent-registry',
    description: "the namespace's agent registry (still running): the reports of the stack's worker",
    async run() {
      return [agentRegistryId];
    },
  },
];

/** A workflow's history and those of every child it started, depth first. */
async function collect(client: Client, workflowId: string, into: RecordedWorkflow[]): Promise<void> {
  if (into.some((recorded) => recorded.workflowId === workflowId)) return;
  const handle = client.workflow.getHandle(workflowId);
  const [history, description] = await Promise.all([handle.fetchHistory(), handle.describe()]);
  const events = history.events ?? [];
  const started = events[0]?.workflowExecutionStartedEventAttributes;
  into.push({
    workflowId,
    workflowType: started?.workflowType?.name ?? '?',
    status: description.status.name,
    events: events.length,
    history: historyToJson(history),
  });
  for (const event of events) {
    const child = event.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
    if (child) await collect(client, child, into);
  }
}

function provenance(sourceKey: string): Provenance {
  // Only the end trimmed: a porcelain line starts with its two status columns, a space among them.
  const git = (...args: string[]) => execFileSync('git', ['-C', repositoryRoot, ...args], { encoding: 'utf8' }).trimEnd();
  const uncommitted = git('status', '--porcelain', '--', 'workflows', 'core', 'policies', ':!core/node')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.slice(3));
  return { commit: git('rev-parse', 'HEAD'), uncommitted, sourceKey, recordedAt: new Date().toISOString() };
}

/**
 * The replay demo: `orderedSteps` v1 and v3 (test/fixtures/replay-demo/) run once each on the stack's
 * Temporal server by a worker of this process, and their histories written beside them.
 */
async function recordReplayDemo(stack: Stack): Promise<void> {
  const connection = await NativeConnection.connect({ address: stack.server.address });
  try {
    for (const version of ['v1', 'v3-patched']) {
      const taskQueue = `replay-demo-${version}`;
      const worker = await Worker.create({
        connection,
        namespace: stack.config.namespace,
        taskQueue,
        workflowsPath: join(replayDemoDir, `${version}.ts`),
        activities: { first: async () => 'first', second: async () => 'second' },
      });
      const workflowId = `replay-demo.${version}`;
      const result = await worker.runUntil(stack.client.workflow.execute<() => Promise<string[]>>('orderedSteps', { taskQueue, workflowId, args: [] }));
      const into: RecordedWorkflow[] = [];
      await collect(stack.client, workflowId, into);
      const file = join(replayDemoDir, `ordered-steps-${version.split('-')[0]}.history.json`);
      writeFileSync(file, `${JSON.stringify({ result, ...into[0] }, null, 1)}\n`);
      process.stderr.write(`[record] ${file}: ${into[0]!.events} events, result ${JSON.stringify(result)}\n`);
    }
  } finally {
    await connection.close();
  }
}

async function main(kinds: string[]): Promise<number> {
  const unknown = kinds.filter((kind) => kind !== 'replay-demo' && !recordings.some((recording) => recording.kind === kind));
  if (unknown.length > 0) {
    process.stderr.write(
      `record-histories: unknown kind ${unknown.join(', ')}; kinds: ${[...recordings.map((recording) => recording.kind), 'replay-demo'].join(', ')}\n`,
    );
    return 2;
  }
  const chosen = (kind: string) => kinds.length === 0 || kinds.includes(kind);
  const sourceKey = workflowSourceKey();
  const from = provenance(sourceKey);
  const stack = await startStack();
  try {
    for (const recording of recordings.filter((entry) => chosen(entry.kind))) {
      const started = Date.now();
      const roots = await recording.run(stack);
      const workflows: RecordedWorkflow[] = [];
      for (const id of roots) await collect(stack.client, id, workflows);
      const fixture: HistoryFixture = { kind: recording.kind, description: recording.description, recordedFrom: from, workflows };
      const file = join(historiesDir, `${recording.kind}.json`);
      writeFileSync(file, `${JSON.stringify(fixture, null, 1)}\n`);
      const summary = workflows.map((workflow) => `${workflow.workflowType} ${workflow.events}`).join(', ');
      process.stderr.write(`[record] ${file}: ${summary} (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
    }
    if (chosen('replay-demo')) await recordReplayDemo(stack);
  } finally {
    await stack.stop();
  }
  // The worker ran the sources as they were when it started: they must not have moved since.
  if (workflowSourceKey() !== sourceKey) {
    process.stderr.write('[record] the workflow sources changed while recording: the fixtures may not match either version; record again\n');
    return 1;
  }
  process.stderr.write(
    `[record] recorded from ${from.commit}${from.uncommitted.length > 0 ? ` with uncommitted changes to ${from.uncommitted.join(', ')}` : ''}\n`,
  );
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`[record] error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}
