import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunEvent } from '../../core/events';
import {
  batchOutcomeLines,
  eventLine,
  formatDuration,
  formatEta,
  isBatchOutcome,
  metersLine,
  outcomeLines,
  printable,
  queueLines,
  queueListLines,
  screenLines,
  statusLines,
} from '../../cli/render';
import { applyEvent, decodeEvent, initialWatchState, type WatchEvent, type WatchState } from '../../cli/watch-state';
import type { LandingView, QueueView } from '../../cli/client';
import type { BatchOutcome } from '../../core/batch-types';

const t0 = Date.parse('2026-01-01T10:00:00.000Z');
const at = (seconds: number) => new Date(t0 + seconds * 1000).toISOString();
let seq = 0;
const journal = (seconds: number, body: Record<string, unknown>) => ({ ...body, seq: ++seq, at: at(seconds) }) as RunEvent;
const meters = { capsulesRun: 6, containersRun: 1, agentSessions: 0, inputTokens: 12_345, outputTokens: 678, costUsd: 0.0123, wallTimeMs: 9_400 };

function fold(events: WatchEvent[], logLimit = 8): { state: WatchState; lines: string[] } {
  let state = initialWatchState('land.demo.main.abc', logLimit);
  const lines: string[] = [];
  for (const event of events) {
    state = applyEvent(state, event);
    const line = eventLine(event, state);
    if (line) lines.push(line);
  }
  return { state, lines };
}

describe('decodeEvent: SSE messages → watch events', () => {
  const cases: { name: string; event: string; data: string; expected: WatchEvent | undefined }[] = [
    {
      name: 'a phase event',
      event: 'phase',
      data: '{"kind":"phase","phase":"gate","seq":4,"at":"x"}',
      expected: { kind: 'phase', phase: 'gate', seq: 4, at: 'x' },
    },
    { name: 'a log line', event: 'log', data: '{"file":"gate-test-r1.log","line":"ok"}', expected: { kind: 'log', file: 'gate-test-r1.log', line: 'ok' } },
    {
      name: 'the end with an outcome',
      event: 'end',
      data: '{"workflowStatus":"COMPLETED","outcome":{"status":"landed","summary":"s"}}',
      expected: { kind: 'end', workflowStatus: 'COMPLETED', outcome: { status: 'landed', summary: 's' } },
    },
    {
      name: 'the end without an outcome (terminated)',
      event: 'end',
      data: '{"workflowStatus":"TERMINATED"}',
      expected: { kind: 'end', workflowStatus: 'TERMINATED' },
    },
    { name: 'a kind this CLI does not know is skipped', event: 'novelty', data: '{"seq":1,"at":"x"}', expected: undefined },
    { name: 'a step without its name is skipped', event: 'step', data: '{"status":"done","seq":1,"at":"x"}', expected: undefined },
    { name: 'a journal event without seq is skipped', event: 'phase', data: '{"phase":"gate","at":"x"}', expected: undefined },
    { name: 'data that is not JSON is skipped', event: 'phase', data: 'gate', expected: undefined },
  ];
  for (const { name, event, data, expected } of cases) it(name, () => assert.deepEqual(decodeEvent({ id: '1', event, data }), expected));
});

describe('plain lines: one per phase change, step end, gate result, session event, question, outcome', () => {
  it('a landing that lands reads as its phases in order, then the outcome', () => {
    seq = 0;
    const { lines, state } = fold([
      journal(0, { kind: 'phase', phase: 'validate' }),
      journal(0, { kind: 'step', name: 'capsule.inspectTarget', status: 'started' }),
      journal(1, { kind: 'step', name: 'capsule.inspectTarget', status: 'done' }),
      journal(1, { kind: 'phase', phase: 'prepare' }),
      journal(2, { kind: 'phase', phase: 'gate' }),
      journal(5, {
        kind: 'gate',
        suiteId: 'test',
        status: 'passed',
        exitCode: 0,
        treeSha: 'abcdef1234567',
        round: 1,
        logRef: 'runs/x/logs/gate-test-r1.log',
        durationMs: 2_500,
      }),
      { kind: 'log', file: 'gate-test-r1.log', line: 'ok' },
      journal(6, { kind: 'meters', meters }),
      journal(8, { kind: 'phase', phase: 'merge' }),
      journal(9, { kind: 'outcome', status: 'landed', summary: 'landed feature/x on main' }),
      { kind: 'end', workflowStatus: 'COMPLETED', outcome: { status: 'landed', summary: 'landed feature/x on main' } },
    ]);
    assert.deepEqual(lines, [
      '[+0:00] phase validate',
      '[+0:01] step ✓ capsule.inspectTarget',
      '[+0:01] phase prepare',
      '[+0:02] phase gate',
      '[+0:05] gate ✓ test round 1 passed (exit 0, 2.5 s) on tree abcdef1 · log runs/x/logs/gate-test-r1.log',
      '[+0:08] phase merge',
      '[+0:09] outcome landed: landed feature/x on main',
    ]);
    assert.equal(state.phase, 'merge');
    assert.equal(state.outcome?.status, 'landed');
  });

  it('a failed step, a session, a cache result and a question each get their line', () => {
    seq = 0;
    const { lines } = fold([
      journal(0, { kind: 'step', name: 'capsule.rebaseBranches', status: 'started' }),
      journal(3, { kind: 'step', name: 'capsule.rebaseBranches', status: 'failed', detail: 'conflict in a.txt' }),
      journal(4, { kind: 'session', sessionId: 'resolver-1', type: 'spawned', role: 'resolver', harnessModel: 'script#resolver', attempt: 1 }),
      journal(9, { kind: 'session', sessionId: 'resolver-1', type: 'classified', class: 'crashed' }),
      journal(10, { kind: 'cache', treeSha: '1234567890', cache: 'partial', restored: ['script#a'] }),
      journal(11, { kind: 'question', id: 'gate-file', question: 'approve the edit of land-gate.json?' }),
      journal(70, { kind: 'question', id: 'gate-file', question: 'approve the edit of land-gate.json?', answer: '' }),
      journal(70, {
        kind: 'question',
        id: 'resolver-1-q1',
        question: 'keep which line?',
        from: 'resolver-1 (resolver, script#resolver)',
        why: 'the rebase stopped at a conflict',
      }),
      journal(70, {
        kind: 'question',
        id: 'fixup-1-implementer-1-q1',
        question: 'yes or no?',
        from: 'fixup-1-implementer-1 (implementer, script#fixer)',
        withdrawn: true,
      }),
      journal(71, { kind: 'budget', state: 'paused', reason: 'tokens: 600 used of 500' }),
      journal(80, { kind: 'budget', state: 'extended', reason: 'extended by an operator' }),
    ]);
    assert.deepEqual(lines, [
      '[+0:03] step ✗ capsule.rebaseBranches failed: conflict in a.txt',
      '[+0:04] session resolver-1 spawned (resolver, script#resolver, attempt 1)',
      '[+0:09] session resolver-1 classified crashed',
      '[+0:10] review cache partial for tree 1234567 (restored: script#a)',
      '[+0:11] question gate-file: approve the edit of land-gate.json? — answer with: tarmac answer land.demo.main.abc "<text>"',
      '[+1:10] answered gate-file: (empty: stop)',
      '[+1:10] question resolver-1-q1 (from resolver-1 (resolver, script#resolver); the rebase stopped at a conflict): keep which line? — answer with: tarmac answer land.demo.main.abc "<text>"',
      '[+1:10] question fixup-1-implementer-1-q1 withdrawn: fixup-1-implementer-1 (implementer, script#fixer) ended without an answer',
      '[+1:11] budget spent (tokens: 600 used of 500): paused — extend with: tarmac budget land.demo.main.abc extend --tokens <n>, or stop with: tarmac budget land.demo.main.abc stop',
      '[+1:20] budget extended: extended by an operator',
    ]);
  });

  it('a journal event seen again after a reconnect is neither applied nor printed twice', () => {
    seq = 0;
    const phase = journal(0, { kind: 'phase', phase: 'gate' });
    const step = journal(1, { kind: 'step', name: 'gate.runSuite:test#1', status: 'started' });
    let state = initialWatchState('r');
    state = applyEvent(applyEvent(state, phase), step);
    const again = applyEvent(state, step);
    assert.equal(again, state, 'the state is unchanged');
    assert.equal(again.steps.length, 1);
  });

  it('log lines are printed only when asked for', () => {
    const state = initialWatchState('r');
    const log: WatchEvent = { kind: 'log', file: 'gate-test-r1.log', line: 'suite ok' };
    assert.equal(eventLine(log, state), undefined);
    assert.equal(eventLine(log, state, { logs: true }), 'log gate-test-r1.log: suite ok');
  });
});

describe('the live screen', () => {
  it('shows phase, steps with marks and times, gates, meters with the live wall clock, and the log tail', () => {
    seq = 0;
    const { state } = fold(
      [
        journal(0, { kind: 'phase', phase: 'gate' }),
        journal(0, { kind: 'step', name: 'capsule.prepareRun', status: 'started' }),
        journal(1, { kind: 'step', name: 'capsule.prepareRun', status: 'done' }),
        journal(1, { kind: 'step', name: 'gate.runSuite:test#1', status: 'started' }),
        journal(2, { kind: 'meters', meters }),
        ...['one', 'two', 'three', 'four'].map((line): WatchEvent => ({ kind: 'log', file: 'gate-test-r1.log', line })),
      ],
      3,
    );
    const screen = screenLines(state, { now: t0 + 12_000, columns: 200 });
    assert.match(screen[0]!, /land\.demo\.main\.abc {2}phase gate$/);
    assert.ok(screen.includes(`  ✓ ${'capsule.prepareRun'.padEnd(32)} 1.0 s`), screen.join('\n'));
    assert.ok(screen.includes(`  ▸ ${'gate.runSuite:test#1'.padEnd(32)} 11 s`), 'a running step shows how long it has been running');
    assert.ok(screen.includes('  tokens 12k in / 678 out · cost $0.0123 · containers 1 · sessions 0 · capsules 6 · wall 12 s'), screen.join('\n'));
    assert.deepEqual(screen.slice(-4), ['  ── gate-test-r1.log', '  │ two', '  │ three', '  │ four'], 'the last N log lines');
  });

  it('never draws a line wider than the terminal, nor a runner escape sequence', () => {
    seq = 0;
    const { state } = fold([journal(0, { kind: 'phase', phase: 'gate' }), { kind: 'log', file: 'a.log', line: `\x1b[31mred\x1b[0m\t${'x'.repeat(300)}` }]);
    for (const line of screenLines(state, { now: t0, columns: 60 })) {
      assert.ok(line.length <= 59, line);
      assert.ok(!line.includes('\x1b') && !line.includes('\t'), line);
    }
    assert.equal(printable('\x1b[1;32mgreen\x1b[0m\tok\r'), 'green  ok');
  });
});

describe('outcome and status', () => {
  it('a red gate: the summary, the failing suite with its log, and the meters', () => {
    const lines = outcomeLines({
      status: 'gate-failed',
      summary: 'gate failed: lint exited 3 (log runs/x/logs/gate-lint-r1.log)',
      gates: [
        { suiteId: 'unit', status: 'passed', exitCode: 0, treeSha: 't', logRef: 'u.log', durationMs: 1, reattached: false, round: 1 },
        { suiteId: 'lint', status: 'failed', exitCode: 3, treeSha: 't', logRef: 'runs/x/logs/gate-lint-r1.log', durationMs: 1, reattached: false, round: 1 },
      ],
      meters,
    });
    assert.deepEqual(lines, [
      'outcome: gate-failed — gate failed: lint exited 3 (log runs/x/logs/gate-lint-r1.log)',
      '  ✗ gate lint round 1 failed (exit 3) · log runs/x/logs/gate-lint-r1.log',
      'meters: tokens 12k in / 678 out · cost $0.0123 · containers 1 · sessions 0 · capsules 6 · wall 9.4 s',
    ]);
  });

  it('a landed outcome names the merged SHA', () => {
    assert.equal(outcomeLines({ status: 'landed', summary: 's', target: 'main', mergedSha: 'f'.repeat(40) })[1], `merged: main is now ${'f'.repeat(40)}`);
    assert.deepEqual(outcomeLines(undefined, undefined, 'TERMINATED'), ['outcome: none recorded (workflow TERMINATED)']);
  });

  it('status of a landing waiting for an answer shows the question and how to answer', () => {
    const view: LandingView = {
      id: 'land.r.main.1',
      workflowStatus: 'RUNNING',
      phase: 'questions',
      steps: [{ name: 'capsule.inspectTarget', status: 'done', startedAt: at(0), endedAt: at(0.4) }],
      gates: [],
      meters: {},
      pendingQuestions: [{ id: 'gate-file', question: 'approve?' }],
      reviews: [],
    };
    assert.deepEqual(statusLines(view), [
      'land.r.main.1  RUNNING  phase questions',
      'steps:',
      `  ✓ ${'capsule.inspectTarget'.padEnd(32)} 0.4 s`,
      'question gate-file: approve?',
      '  answer with: tarmac answer land.r.main.1 "<text>"',
      'meters: tokens 0 in / 0 out · cost $0.0000 · containers 0 · sessions 0 · capsules 0 · wall ?',
    ]);
  });

  it('status of a red settled by evidence: what settled it, why it does not block, and each run with its log', () => {
    const tree = 'a'.repeat(40);
    const view: LandingView = {
      id: 'land.r.main.2',
      workflowStatus: 'RUNNING',
      phase: 'verify',
      steps: [],
      gates: [
        {
          suiteId: 'test',
          treeSha: tree,
          status: 'failed',
          exitCode: 3,
          logRef: 'runs/x/logs/gate-test-r1.log',
          durationMs: 1000,
          reattached: false,
          round: 1,
          settled: 'flaky',
          excused: { by: 'retry' },
          evidence: [
            {
              on: 'same-tree',
              commitSha: 'h'.repeat(40),
              treeSha: tree,
              status: 'passed',
              exitCode: 0,
              logRef: 'runs/x/logs/gate-test-r1-same-tree.log',
              durationMs: 900,
            },
            {
              on: 'base',
              commitSha: 'b'.repeat(40),
              treeSha: 'c'.repeat(40),
              status: 'failed',
              exitCode: 3,
              logRef: 'runs/x/logs/gate-test-r1-base.log',
              durationMs: 800,
            },
          ],
        },
      ],
      meters: {},
      pendingQuestions: [],
      reviews: [],
    };
    assert.deepEqual(statusLines(view).slice(1, 6), [
      'gates:',
      `  ✗ test round 1 failed (exit 3, 1.0 s) on tree aaaaaaa · log runs/x/logs/gate-test-r1.log`,
      '      settled flaky, does not block (retry)',
      '      again: passed (exit 0) · log runs/x/logs/gate-test-r1-same-tree.log',
      '      on the base bbbbbbb: failed (exit 3) · log runs/x/logs/gate-test-r1-base.log',
    ]);
  });

  it('durations and meters read naturally', () => {
    const table: [number, string][] = [
      [400, '0.4 s'],
      [9_949, '9.9 s'],
      [12_000, '12 s'],
      [185_000, '3 m 05 s'],
      [3_720_000, '1 h 02 m'],
    ];
    for (const [ms, text] of table) assert.equal(formatDuration(ms), text);
    assert.equal(metersLine(undefined), 'tokens 0 in / 0 out · cost $0.0000 · containers 0 · sessions 0 · capsules 0 · wall ?');
  });
});

describe('the merge queue: tarmac queue, and the batch lineage of a landing', () => {
  const queueId = 'queue.app.main.0123456789ab';
  const base = { repo: 'file:///srv/app.git', target: 'main', queueId, running: true, admitted: 7, batches: 1 };

  it('one queue: who holds the target and for how long, the line by position with lanes and ETAs, the median turn', () => {
    const view: QueueView = {
      ...base,
      current: 'land.app.main.p',
      turnInFlightMs: 12_000,
      waiting: [
        { landingId: 'land.app.main.a', position: 0, lane: 5, seq: 3, batchable: true, etaMs: 42_000, links: { landing: '/v1/landings/land.app.main.a' } },
        { landingId: 'land.app.main.c', position: 1, lane: 0, seq: 2, batchable: true, etaMs: 42_000, links: { landing: '/v1/landings/land.app.main.c' } },
        {
          landingId: 'land.app.main.long-name',
          position: 2,
          lane: -1,
          seq: 1,
          batchable: false,
          etaMs: 185_000,
          links: { landing: '/v1/landings/land.app.main.long-name' },
        },
      ],
      recentTurnMs: [20_000, 40_000, 30_000],
    };
    assert.deepEqual(queueLines(view), [
      `queue ${queueId}: main of file:///srv/app.git`,
      'holds the target: land.app.main.p (for 12 s)',
      'waiting: 3',
      '  POS  LANDING                  LANE  BATCHABLE  ETA',
      '  0    land.app.main.a          +5    yes        ~42 s',
      '  1    land.app.main.c          0     yes        ~42 s',
      '  2    land.app.main.long-name  -1    no         ~3 m 05 s',
      'admitted 7 · batches 1 · a turn takes 30 s (median of the last 3)',
    ]);
  });

  it('a batch in flight with its members; before any turn was timed there is no ETA; a queue that does not run says so', () => {
    const batchId = `${queueId}.batch-2`;
    const view: QueueView = {
      ...base,
      batches: 2,
      batch: { id: batchId, members: ['land.a', 'land.b'], links: { self: `/v1/runs/${batchId}` } },
      turnInFlightMs: 3_400,
      waiting: [{ landingId: 'land.c', position: 0, lane: 0, seq: 5, batchable: true, links: { landing: '/v1/landings/land.c' } }],
      recentTurnMs: [],
    };
    assert.deepEqual(queueLines(view), [
      `queue ${queueId}: main of file:///srv/app.git`,
      `batch in flight: ${batchId} (for 3.4 s)`,
      '  members: land.a, land.b',
      'waiting: 1',
      '  POS  LANDING  LANE  BATCHABLE  ETA',
      '  0    land.c   0     yes        -',
      'admitted 7 · batches 2 · no turn timed yet (no ETA)',
    ]);
    assert.deepEqual(queueLines({ ...base, current: 'land.x', waiting: [], recentTurnMs: [1_000, 3_000] }).slice(1), [
      'holds the target: land.x',
      'nobody waits',
      'admitted 7 · batches 1 · a turn takes 2.0 s (median of the last 2)',
    ]);
    assert.deepEqual(queueLines({ ...base, running: false, admitted: 0, batches: 0, waiting: [], recentTurnMs: [] }), [
      'no queue runs for main of file:///srv/app.git: nothing holds the target and nobody waits',
    ]);
    assert.equal(queueLines({ ...base, waiting: [], recentTurnMs: [] })[1], 'the target is free');
  });

  it('every queue that runs, one a row: the holder (a landing or a batch), the line, the next ETA', () => {
    assert.deepEqual(
      queueListLines([
        {
          ...base,
          current: 'land.app.main.p',
          waiting: [{ landingId: 'land.a', position: 0, lane: 0, seq: 1, batchable: true, etaMs: 65_000, links: { landing: '/v1/landings/land.a' } }],
          recentTurnMs: [60_000],
        },
        {
          ...base,
          target: 'release/2',
          queueId: 'queue.app.release_2.0',
          batch: { id: 'queue.app.release_2.0.batch-1', members: ['land.r'], links: { self: '/v1/runs/queue.app.release_2.0.batch-1' } },
          waiting: [],
          admitted: 1,
          recentTurnMs: [],
        },
      ]),
      [
        'TARGET     HOLDER                               WAITING  NEXT ETA   ADMITTED  BATCHES  REPO',
        'main       land.app.main.p                      1        ~1 m 05 s  7         1        file:///srv/app.git',
        'release/2  batch queue.app.release_2.0.batch-1  0        -          1         1        file:///srv/app.git',
      ],
    );
    assert.deepEqual(queueListLines([]), ['no target queue runs']);
    assert.equal(formatEta(undefined), '-');
    assert.equal(formatEta(400), '~0.4 s');
  });

  it("a landing's outcome names the batch it merged in, and each batch that named it the culprit", () => {
    const lines = outcomeLines({
      status: 'landed',
      summary: 'landed',
      target: 'main',
      mergedSha: 'f'.repeat(40),
      batch: { id: `${queueId}.batch-1`, members: ['land.a1', 'land.a2', 'land.a3'], round: 2, treeSha: 'e'.repeat(40), stackedSha: 'd'.repeat(40) },
      culpritIn: [{ batchId: `${queueId}.batch-0`, round: 1, treeSha: 'c'.repeat(40), failing: ['check', 'lint'] }],
    });
    assert.deepEqual(lines.slice(1, 4), [
      `merged: main is now ${'f'.repeat(40)}`,
      `batch: merged in ${queueId}.batch-1, gate round 2 on tree eeeeeee (its commit ddddddd); merged together: land.a1, land.a2, land.a3`,
      `culprit in batch ${queueId}.batch-0: round 1 on tree ccccccc red (check, lint); a fixup round, then back in the queue at its place`,
    ]);
    assert.ok(!outcomeLines({ status: 'landed', summary: 's' }).some((line) => /batch/.test(line)), 'no batch line for a landing that merged alone');
  });

  it("status of a merge batch: each member's result, each round (prefix, tree, red suites), each fast-forward", () => {
    const gate = (suiteId: string, status: 'passed' | 'failed') => ({
      suiteId,
      status,
      exitCode: status === 'passed' ? 0 : 5,
      treeSha: 't',
      logRef: `${suiteId}.log`,
      durationMs: 1,
      reattached: false,
    });
    const outcome: BatchOutcome = {
      batchId: `${queueId}.batch-1`,
      target: 'main',
      merges: [{ from: '1'.repeat(40), to: '2'.repeat(40), members: ['land.a1', 'land.a2'], round: 2 }],
      rounds: [
        { round: 1, prefix: 3, headSha: 'h3', treeSha: 'a'.repeat(40), green: false, gates: [gate('check', 'failed')] },
        { round: 2, prefix: 2, headSha: 'h2', treeSha: 'b'.repeat(40), green: true, gates: [gate('check', 'passed')] },
      ],
      results: {
        'land.a1': {
          kind: 'landed',
          batchId: `${queueId}.batch-1`,
          mergedSha: '2'.repeat(40),
          stackedSha: 's1',
          treeSha: 'b'.repeat(40),
          members: ['land.a1', 'land.a2'],
          round: 2,
        },
        'land.b': { kind: 'culprit', batchId: `${queueId}.batch-1`, failing: ['check'], summary: 's', treeSha: 'a'.repeat(40), round: 1 },
        'land.c': { kind: 'retry', batchId: `${queueId}.batch-1`, reason: 'its commits conflict with the stack' },
      },
      summary: '2 of 4 landed in 1 fast-forward(s) after 2 gate round(s); culprit(s): land.b',
    };
    assert.ok(isBatchOutcome(outcome));
    assert.ok(!isBatchOutcome({ summary: 's', outcome: 'fixed' }));
    assert.deepEqual(batchOutcomeLines(outcome), [
      'outcome: 2 of 4 landed in 1 fast-forward(s) after 2 gate round(s); culprit(s): land.b',
      'members:',
      '  ✓ land.a1 landed (round 2, tree bbbbbbb)',
      '  ✗ land.b culprit (round 1, tree aaaaaaa: check red): its fixup round, then back in the queue',
      '  · land.c goes on alone: its commits conflict with the stack',
      'round 1: the first 3 stacked on tree aaaaaaa ✗ red (check failed)',
      'round 2: the first 2 stacked on tree bbbbbbb ✓ green',
      'merged: main 1111111 → 2222222 (round 2: land.a1, land.a2)',
    ]);
  });
});
