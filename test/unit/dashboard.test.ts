import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app';
import { dashboardCsp } from '../../api/dashboard';
import { loadConfig } from '../../core/node/config';
import type { RunEvent } from '../../core/events';
import type { SessionStatusView } from '../../core/session-types';
import {
  batchLineage,
  batchMembers,
  gateRounds,
  humanDuration,
  metersAgainstBudget,
  phaseTimeline,
  queuePanel,
  sessionRows,
  stepGraph,
  type LandingView,
  type QueueView,
} from '../../dashboard/src/model';
import { egressHosts, environmentRows, environmentUseRows } from '../../dashboard/src/environment-model';
import { SseParser } from '../../dashboard/src/sse';
import { buildDashboard } from '../../scripts/build-dashboard';
import { TemporalStandIn } from '../helpers/temporal-stand-in';

/**
 * The dashboard's pure parts (its SSE parser and what the run page derives from the API's
 * answers) as tables, and the API serving a real build of it (esbuild) through app.inject.
 * The page in a browser against the real stack: test/e2e/dashboard.test.ts.
 */

const stream =
  'retry: 2000\n\n: keep-alive\n\nid: c1\nevent: phase\ndata: {"kind":"phase"}\n\nid: c2\nevent: log\ndata: line one\ndata: line two\n\nevent: end\ndata: {}\n\n';
const sseCases: { name: string; chunks: string[]; expected: { event: string; data: string; id?: string }[]; lastEventId?: string; retryMs?: number }[] = [
  {
    name: 'whole stream in one chunk: comments skipped, multi-line data joined, end without an id',
    chunks: [stream],
    expected: [
      { event: 'phase', data: '{"kind":"phase"}', id: 'c1' },
      { event: 'log', data: 'line one\nline two', id: 'c2' },
      { event: 'end', data: '{}' },
    ],
    lastEventId: 'c2',
    retryMs: 2000,
  },
  {
    name: 'the same stream cut into one-character chunks gives the same messages',
    chunks: [...stream],
    expected: [
      { event: 'phase', data: '{"kind":"phase"}', id: 'c1' },
      { event: 'log', data: 'line one\nline two', id: 'c2' },
      { event: 'end', data: '{}' },
    ],
    lastEventId: 'c2',
    retryMs: 2000,
  },
  {
    name: 'CRLF line ends, split between \\r and \\n',
    chunks: ['id: 7\r', '\nevent: gate\r\ndata: x\r', '\n\r', '\n'],
    expected: [{ event: 'gate', data: 'x', id: '7' }],
    lastEventId: '7',
  },
  { name: 'no event name is a message; an unfinished event is held back', chunks: ['data: a\n\ndata: b\n'], expected: [{ event: 'message', data: 'a' }] },
  { name: 'a retry that is not a number is ignored', chunks: ['retry: soon\ndata: a\n\n'], expected: [{ event: 'message', data: 'a' }] },
];
for (const { name, chunks, expected, lastEventId, retryMs } of sseCases) {
  test(`SseParser: ${name}`, () => {
    const parser = new SseParser();
    const messages = chunks.flatMap((chunk) => parser.feed(chunk));
    assert.deepEqual(messages, expected);
    assert.equal(parser.lastEventId, lastEventId);
    assert.equal(parser.retryMs, retryMs);
  });
}

const at = (second: number) => `2024-01-01T00:00:${String(second).padStart(2, '0')}.000Z`;
const tree = (digit: string) => digit.repeat(40);
const event = (seq: number, body: Record<string, unknown>) => ({ ...body, seq, at: at(seq) }) as RunEvent;
const meters = { capsulesRun: 4, containersRun: 3, agentSessions: 2, inputTokens: 900, outputTokens: 100, costUsd: 0.5, wallTimeMs: 60_000 };

/** A landing that went: resolver (respawned once) → gate red → fixup → gate green (reattached) → review from the cache. */
const view: Pick<LandingView, 'steps' | 'gates' | 'reviews' | 'outcome'> = {
  steps: [
    { name: 'capsule.rebaseBranches', status: 'done', startedAt: at(1), endedAt: at(2) },
    { name: 'session.resolver:resolver-1', status: 'done', startedAt: at(2), endedAt: at(4) },
    { name: 'gate.runSuite:test#1', status: 'done', startedAt: at(5), endedAt: at(6), detail: 'failed (exit 4)' },
    { name: 'fix.loop:fixup-1', status: 'done', startedAt: at(6), endedAt: at(8) },
    { name: 'gate.runSuite:test#2', status: 'done', startedAt: at(8), endedAt: at(9), detail: 'passed (exit 0), reattached' },
    { name: 'review.panel:script-trio#1', status: 'done', startedAt: at(9), endedAt: at(10), detail: 'approved; REVIEW_CACHE=hit' },
    { name: 'capsule.prepareRun', status: 'skipped', startedAt: at(10) },
  ],
  gates: [
    {
      suiteId: 'test',
      treeSha: tree('a'),
      status: 'failed',
      exitCode: 4,
      logRef: 'runs/x/logs/gate-test-1.log',
      durationMs: 1000,
      reattached: false,
      round: 1,
    },
    { suiteId: 'test', treeSha: tree('b'), status: 'passed', exitCode: 0, logRef: 'runs/x/logs/gate-test-2.log', durationMs: 900, reattached: true, round: 2 },
  ],
  reviews: [
    {
      treeSha: tree('b'),
      status: 'approved',
      summary: 'ok',
      cache: 'hit',
      restored: ['script#reviewer-a'],
      sessionsStarted: 0,
      missing: [],
      blocking: [],
      reviewers: [],
      meters: { sessionsSpawned: 0, respawns: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 },
    },
  ],
  outcome: {
    status: 'landed',
    summary: 'landed',
    runId: 'land.x',
    repo: '/r',
    target: 'main',
    heads: [],
    endedInPhase: 'merge',
    gates: [],
    meters,
    supersedes: [{ suiteId: 'test', red: { treeSha: tree('a'), round: 1, status: 'failed' }, supersededBy: { treeSha: tree('b'), round: 2 } }],
    sessions: [{ sessionId: 'resolver-1', role: 'resolver', status: 'delivered', harnessModel: 'script#resolver', attempts: 2 }],
  },
};
const journal: RunEvent[] = [
  event(1, { kind: 'phase', phase: 'rebase' }),
  event(2, { kind: 'session', sessionId: 'resolver-1', type: 'spawned', role: 'resolver', attempt: 1, harnessModel: 'script#resolver' }),
  event(3, { kind: 'session', sessionId: 'resolver-1', type: 'classified', attempt: 1, class: 'crashed' }),
  event(4, { kind: 'session', sessionId: 'resolver-1', type: 'respawned', attempt: 2 }),
  event(5, { kind: 'session', sessionId: 'resolver-1', type: 'classified', attempt: 2, class: 'delivered' }),
  event(6, { kind: 'phase', phase: 'gate' }),
  event(7, { kind: 'phase', phase: 'fixup' }),
  event(8, { kind: 'session', sessionId: 'fixup-1-implementer-1', type: 'spawned', role: 'implementer', attempt: 1, harnessModel: 'script#fixer' }),
  event(9, { kind: 'session', sessionId: 'fixup-1-implementer-1', type: 'escalated', attempt: 2, harnessModel: 'script#bigger' }),
];

describe('the run page derives its marks from the status, the outcome and the journal', () => {
  it('step graph: respawned session, superseded red gate, reattached green gate, review from the cache, skipped step', () => {
    const marks = Object.fromEntries(stepGraph(view, journal).map((step) => [step.name, step.markers]));
    assert.deepEqual(marks, {
      'capsule.rebaseBranches': [],
      'session.resolver:resolver-1': ['respawned'],
      'gate.runSuite:test#1': ['superseded'],
      'fix.loop:fixup-1': [],
      'gate.runSuite:test#2': ['reattached'],
      'review.panel:script-trio#1': ['cached'],
      'capsule.prepareRun': ['skipped'],
    });
  });

  it('gate rounds: one per round with its tree; the red marked superseded, the green reattached', () => {
    assert.deepEqual(
      gateRounds(view.gates, view.outcome).map((round) => ({
        round: round.round,
        tree: round.treeSha,
        results: round.results.map((result) => `${result.suiteId}:${result.status}:${result.markers.join('+')}`),
      })),
      [
        { round: 1, tree: tree('a'), results: ['test:failed:superseded'] },
        { round: 2, tree: tree('b'), results: ['test:passed:reattached'] },
      ],
    );
  });

  it('a gate result reused from the gate cache is marked cached, in the step graph and its round; a miss is not', () => {
    const reused: Pick<LandingView, 'steps' | 'gates' | 'reviews' | 'outcome'> = {
      steps: [
        { name: 'gate.runSuite:lint#1', status: 'done', startedAt: at(1), endedAt: at(1), detail: 'passed (exit 0); GATE_CACHE=hit' },
        { name: 'gate.runSuite:test#1', status: 'done', startedAt: at(1), endedAt: at(3), detail: 'passed (exit 0); GATE_CACHE=miss' },
      ],
      gates: [
        {
          suiteId: 'lint',
          treeSha: tree('c'),
          status: 'passed',
          exitCode: 0,
          logRef: 'runs/y/logs/gate-lint.log',
          durationMs: 4000,
          reattached: false,
          round: 1,
          cache: 'hit',
        },
        {
          suiteId: 'test',
          treeSha: tree('c'),
          status: 'passed',
          exitCode: 0,
          logRef: 'runs/y/logs/gate-test.log',
          durationMs: 2000,
          reattached: false,
          round: 1,
          cache: 'miss',
        },
      ],
      reviews: [],
    };
    assert.deepEqual(
      stepGraph(reused, []).map((step) => step.markers),
      [['cached'], []],
    );
    assert.deepEqual(
      gateRounds(reused.gates, undefined)[0]!.results.map((result) => `${result.suiteId}:${result.markers.join('+')}`),
      ['lint:cached', 'test:'],
    );
  });

  it('a red settled by evidence is marked in its round (flaky, pre-existing, red again, quarantined); its evidence runs are named steps', () => {
    const red = (suiteId: string, settled: 'flaky' | 'pre-existing' | 'failed', excused?: 'retry' | 'quarantine' | 'pre-existing') => ({
      suiteId,
      treeSha: tree('d'),
      status: 'failed' as const,
      exitCode: 1,
      logRef: `runs/z/logs/gate-${suiteId}.log`,
      durationMs: 1000,
      reattached: false,
      round: 1,
      settled,
      evidence: [],
      ...(excused ? { excused: { by: excused } } : {}),
    });
    const settledView: Pick<LandingView, 'steps' | 'gates' | 'reviews' | 'outcome'> = {
      steps: [
        { name: 'gate.runSuite:unit#1', status: 'done', startedAt: at(1), endedAt: at(2) },
        { name: 'gate.runSuite:unit#1.same-tree', status: 'done', startedAt: at(2), endedAt: at(3) },
        { name: 'gate.runSuite:unit#1.base', status: 'done', startedAt: at(2), endedAt: at(3) },
      ],
      gates: [red('unit', 'flaky', 'retry'), red('lint', 'pre-existing', 'pre-existing'), red('e2e', 'failed'), red('smoke', 'flaky', 'quarantine')],
      reviews: [],
    };
    assert.deepEqual(
      gateRounds(settledView.gates, undefined)[0]!.results.map((result) => `${result.suiteId}:${result.markers.join('+')}`),
      ['unit:flaky', 'lint:pre-existing', 'e2e:failed-again', 'smoke:flaky+quarantined'],
    );
    assert.deepEqual(
      stepGraph(settledView, []).map((step) => step.subject),
      ['unit (round 1)', 'unit (round 1, again on the same tree)', 'unit (round 1, on the base)'],
    );
  });

  it("sessions: class of the last attempt, ladder rung after escalations, tokens from the session's own status", () => {
    const resolverStatus = {
      state: 'done',
      attempt: 2,
      harnessModel: 'script#resolver',
      decisions: [],
      meters: {
        sessionsSpawned: 2,
        respawns: 1,
        escalations: 0,
        reattachments: 0,
        inputTokens: 300,
        outputTokens: 20,
        costUsd: 0.1,
        wallTimeMs: 1,
        capsulesRun: 1,
        budgetPauses: 0,
      },
    } as SessionStatusView;
    const rows = sessionRows(journal, view.outcome, new Map([['resolver-1', resolverStatus]]));
    assert.deepEqual(
      rows.map(({ sessionId, role, harnessModel, status, attemptClass, rung, attempts, respawns, inputTokens, outputTokens, markers }) => ({
        sessionId,
        role,
        harnessModel,
        status,
        attemptClass,
        rung,
        attempts,
        respawns,
        inputTokens,
        outputTokens,
        markers,
      })),
      [
        {
          sessionId: 'resolver-1',
          role: 'resolver',
          harnessModel: 'script#resolver',
          status: 'delivered',
          attemptClass: 'delivered',
          rung: 1,
          attempts: 2,
          respawns: 1,
          inputTokens: 300,
          outputTokens: 20,
          markers: ['respawned'],
        },
        {
          sessionId: 'fixup-1-implementer-1',
          role: 'implementer',
          harnessModel: 'script#bigger',
          status: 'running',
          attemptClass: undefined,
          rung: 2,
          attempts: 2,
          respawns: 0,
          inputTokens: undefined,
          outputTokens: undefined,
          markers: ['escalated'],
        },
      ],
    );
  });

  it('phase timeline: each phase until the next; the last is current while the run goes on', () => {
    assert.deepEqual(phaseTimeline(journal, false), [
      { phase: 'rebase', at: at(1), endedAt: at(6), current: false },
      { phase: 'gate', at: at(6), endedAt: at(7), current: false },
      { phase: 'fixup', at: at(7), current: true },
    ]);
    const done = [...journal, event(10, { kind: 'outcome', status: 'landed', summary: 'ok' })];
    assert.deepEqual(phaseTimeline(done, true).at(-1), { phase: 'fixup', at: at(7), endedAt: at(10), current: false });
  });

  it('meters against the budget: tokens are input + output; no budget, no limits', () => {
    const budget = { tokens: 2000, costUsd: 1, sessions: 4, wallMs: 3_600_000, onExhausted: 'pause' as const };
    assert.deepEqual(
      metersAgainstBudget(meters, budget).map((row) => [row.name, row.used, row.limit]),
      [
        ['tokens', 1000, 2000],
        ['cost', 0.5, 1],
        ['agent sessions', 2, 4],
        ['wall time', 60_000, 3_600_000],
      ],
    );
    assert.ok(metersAgainstBudget(meters, undefined).every((row) => row.limit === undefined));
  });
});

describe("the merge queue on the dashboard: a landing's batch lineage, a batch's page, the queue panel", () => {
  const batchId = 'queue.app.main.0123456789ab.batch-1';

  it('a landing merged in a batch: the batch, its round and tree, every member with this landing marked; each batch that named it the culprit', () => {
    const outcome = {
      batch: { id: batchId, members: ['land.a1', 'land.b', 'land.a2'], round: 3, treeSha: tree('e'), stackedSha: tree('d') },
      culpritIn: [{ batchId: 'queue.app.main.0123456789ab.batch-0', round: 1, treeSha: tree('c'), failing: ['check'] }],
    };
    assert.deepEqual(batchLineage(outcome, 'land.b'), {
      batch: {
        id: batchId,
        round: 3,
        treeSha: tree('e'),
        stackedSha: tree('d'),
        members: [
          { id: 'land.a1', self: false },
          { id: 'land.b', self: true },
          { id: 'land.a2', self: false },
        ],
      },
      culprits: [{ batchId: 'queue.app.main.0123456789ab.batch-0', round: 1, treeSha: tree('c'), failing: ['check'] }],
    });
    assert.deepEqual(batchLineage({ culpritIn: outcome.culpritIn }, 'land.b'), { culprits: outcome.culpritIn }, 'a culprit that then merged alone');
    assert.equal(batchLineage({}, 'land.x'), undefined, 'a landing that went through the queue alone has no lineage');
    assert.equal(batchLineage(undefined, 'land.x'), undefined, 'nor one that has no outcome yet');
  });

  it("a batch's members: landed with its round, the culprit with the red suites, the others on their own", () => {
    assert.deepEqual(
      batchMembers({
        results: {
          'land.a1': { kind: 'landed', batchId, mergedSha: tree('2'), stackedSha: tree('s'), treeSha: tree('b'), members: ['land.a1'], round: 2 },
          'land.b': { kind: 'culprit', batchId, failing: ['check', 'lint'], summary: 's', treeSha: tree('a'), round: 1 },
          'land.c': { kind: 'retry', batchId, reason: 'its commits conflict with the stack' },
        },
      }),
      [
        { landingId: 'land.a1', result: 'landed', round: 2, detail: 'landed in round 2 (tree bbbbbbbbbb)' },
        { landingId: 'land.b', result: 'culprit', round: 1, detail: 'the culprit: round 1 red (check, lint); a fixup round, then back in the queue' },
        { landingId: 'land.c', result: 'retry', detail: 'goes on alone: its commits conflict with the stack' },
      ],
    );
  });

  it('the queue panel: the holder (a landing, or a batch with its members), the line by position with signed lanes and ETAs, the median turn', () => {
    const queue: QueueView = {
      repo: '/srv/app',
      target: 'main',
      queueId: 'queue.app.main.0123456789ab',
      running: true,
      current: 'land.p',
      turnInFlightMs: 75_000,
      waiting: [
        { landingId: 'land.low', position: 1, lane: -1, seq: 1, batchable: false, etaMs: 3_725_000, links: { landing: '/v1/landings/land.low' } },
        { landingId: 'land.high', position: 0, lane: 5, seq: 2, batchable: true, etaMs: 9_500, links: { landing: '/v1/landings/land.high' } },
      ],
      admitted: 3,
      batches: 1,
      recentTurnMs: [4_000, 10_000, 20_000, 30_000],
    };
    assert.deepEqual(queuePanel(queue), {
      holder: { kind: 'landing', id: 'land.p' },
      inFlight: '1 min 15 s',
      line: [
        { landingId: 'land.high', position: 0, lane: '+5', batchable: true, eta: 'about 9.5 s' },
        { landingId: 'land.low', position: 1, lane: '-1', batchable: false, eta: 'about 1 h 02 min' },
      ],
      turns: 'A turn takes 15 s (median of the last 4).',
    });
    const batched = queuePanel({
      ...queue,
      current: undefined,
      batch: { id: batchId, members: ['land.a', 'land.b'], links: { self: `/v1/runs/${batchId}` } },
      waiting: [{ landingId: 'land.c', position: 0, lane: 0, seq: 3, batchable: true, links: { landing: '/v1/landings/land.c' } }],
      recentTurnMs: [],
    });
    assert.deepEqual(batched.holder, { kind: 'batch', id: batchId, members: ['land.a', 'land.b'] });
    assert.deepEqual(batched.line, [{ landingId: 'land.c', position: 0, lane: '0', batchable: true, eta: 'not known yet' }]);
    assert.equal(batched.turns, 'No turn timed yet: no ETA.');
    assert.deepEqual(
      queuePanel({ ...queue, current: undefined, turnInFlightMs: undefined, waiting: [] }),
      { line: [], turns: 'A turn takes 15 s (median of the last 4).' },
      'a free target',
    );
  });

  it('durations read as a person says them', () => {
    const table: [number, string][] = [
      [400, '0.4 s'],
      [12_000, '12 s'],
      [185_000, '3 min 05 s'],
      [3_720_000, '1 h 02 min'],
      [-1, '?'],
    ];
    for (const [ms, text] of table) assert.equal(humanDuration(ms), text);
  });
});

describe("environments on the dashboard: the host's list and a landing's panel", () => {
  const egress = [
    { host: 'registry.example.test', port: 443, allowed: true, bytesUp: 1000, bytesDown: 2048 * 1024 },
    { host: 'evil.example.test', port: 443, allowed: false, bytesUp: 0, bytesDown: 0, reason: 'not on the allow-list' },
    { host: 'registry.example.test', port: 443, allowed: true, bytesUp: 24, bytesDown: 1024 * 1024 },
    { host: 'evil.example.test', port: 80, allowed: false, bytesUp: 0, bytesDown: 0, reason: 'port 80 is not allowed' },
  ];

  it('egress hosts: one line per host, port and verdict, connections and bytes added up, refused first', () => {
    assert.deepEqual(egressHosts(egress), [
      { host: 'evil.example.test:443', allowed: false, connections: 1, traffic: '0 B', reason: 'not on the allow-list' },
      { host: 'evil.example.test:80', allowed: false, connections: 1, traffic: '0 B', reason: 'port 80 is not allowed' },
      { host: 'registry.example.test:443', allowed: true, connections: 2, traffic: '3.0 MiB' },
    ]);
    assert.deepEqual(egressHosts([]), []);
  });

  it("a landing's environments: the tree, the short key, ENV_CACHE, the build (or why it failed), the hosts", () => {
    const rows = environmentUseRows([
      { commitSha: tree('c'), treeSha: tree('d'), key: `sha256:${'1'.repeat(64)}`, cache: 'miss', buildMs: 42_000, egress },
      { commitSha: tree('e'), treeSha: tree('f'), key: `sha256:${'1'.repeat(64)}`, cache: 'hit', buildMs: 42_000, egress: [] },
      { commitSha: tree('a'), key: `sha256:${'2'.repeat(64)}`, cache: 'miss', buildMs: 900, egress: [], failed: 'setup[0] `npm ci` exited 1' },
    ]);
    assert.deepEqual(
      rows.map(({ tree: treeShown, shortKey, cache, detail, failed, egress: hosts }) => ({
        tree: treeShown,
        shortKey,
        cache,
        detail,
        failed,
        hosts: hosts.length,
      })),
      [
        { tree: 'dddddddddd', shortKey: '111111111111', cache: 'miss', detail: 'built in 42 s', failed: false, hosts: 3 },
        { tree: 'ffffffffff', shortKey: '111111111111', cache: 'hit', detail: 'reused (built in 42 s)', failed: false, hosts: 0 },
        { tree: 'aaaaaaaaaa', shortKey: '222222222222', cache: 'miss', detail: 'failed: setup[0] `npm ci` exited 1', failed: true, hosts: 0 },
      ],
    );
    assert.deepEqual(environmentUseRows(undefined), [], 'an outcome without environments shows no panel');
  });

  it("the host's environments: size and build time as a person reads them, the runs holding each", () => {
    const [row] = environmentRows([
      {
        key: `sha256:${'3'.repeat(64)}`,
        repo: '/srv/app.git',
        baseImage: 'tarmac/runner:local',
        sizeBytes: 340 * 1024 ** 2,
        lastUsedAt: at(5),
        buildMs: 185_000,
        usedBy: ['land.b', 'land.a'],
        builtBy: { runId: 'land.a' },
        egress,
      },
    ]);
    assert.deepEqual(
      { ...row, egress: row!.egress.map((host) => host.host) },
      {
        key: `sha256:${'3'.repeat(64)}`,
        shortKey: '333333333333',
        repo: '/srv/app.git',
        baseImage: 'tarmac/runner:local',
        size: '340 MiB',
        lastUsedAt: at(5),
        build: '3 min 05 s',
        builtBy: 'land.a',
        usedBy: ['land.b', 'land.a'],
        egress: ['evil.example.test:443', 'evil.example.test:80', 'registry.example.test:443'],
      },
    );
  });
});

describe('the API serves a build of the dashboard (no Temporal, no Docker)', () => {
  const token = 'unit-token-0123456789abcdef';
  const temporal = new TemporalStandIn();
  const outDir = join(mkdtempSync(join(tmpdir(), 'tarmac-unit-dashboard-')), 'dashboard');
  let app: FastifyInstance;
  let unbuilt: FastifyInstance;
  before(async () => {
    await buildDashboard(outDir);
    const config = loadConfig({ TARMAC_API_TOKENS: token, TARMAC_DATA_DIR: mkdtempSync(join(tmpdir(), 'tarmac-unit-dashboard-data-')) });
    app = await buildApp({ client: temporal.client, config, dashboardDir: outDir });
    unbuilt = await buildApp({ client: temporal.client, config, dashboardDir: join(outDir, 'not-built') });
  });
  after(async () => {
    await app?.close();
    await unbuilt?.close();
    rmSync(join(outDir, '..'), { recursive: true, force: true });
  });

  it('the page and its assets, without a token, each with the strict CSP and the other security headers', async () => {
    const redirect = await app.inject({ method: 'GET', url: '/dashboard' });
    assert.equal(redirect.statusCode, 308);
    assert.equal(redirect.headers.location, '/dashboard/');
    for (const [url, type] of [
      ['/dashboard/', /^text\/html/],
      ['/dashboard/app.js', /^text\/javascript/],
      ['/dashboard/app.css', /^text\/css/],
      ['/dashboard/favicon.svg', /^image\/svg\+xml/],
    ] as const) {
      const response = await app.inject({ method: 'GET', url });
      assert.equal(response.statusCode, 200, url);
      assert.match(String(response.headers['content-type']), type, url);
      assert.equal(response.headers['content-security-policy'], dashboardCsp, url);
      assert.equal(response.headers['x-content-type-options'], 'nosniff', url);
      assert.equal(response.headers['x-frame-options'], 'DENY', url);
      assert.equal(response.headers['referrer-policy'], 'no-referrer', url);
    }
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
      "object-src 'none'",
    ]) {
      assert.ok(dashboardCsp.split('; ').includes(directive), directive);
    }
    assert.doesNotMatch(dashboardCsp, /unsafe-inline|unsafe-eval|\*|https?:/, 'no inline script or style, no eval, no other origin');
  });

  it('the build loads nothing from elsewhere and runs no inline script: every script and stylesheet is a local file', () => {
    const html = readFileSync(join(outDir, 'index.html'), 'utf8');
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.equal(scripts.length, 1);
    for (const [, attributes, body] of scripts) {
      assert.match(attributes!, /src="app\.js"/);
      assert.equal(body!.trim(), '', 'no inline script');
    }
    assert.doesNotMatch(html, /\b(src|href)="(https?:)?\/\//, 'no asset from another origin');
    assert.doesNotMatch(html, /\sstyle=|<style/, 'no inline style');
    const code = readFileSync(join(outDir, 'app.js'), 'utf8');
    assert.doesNotMatch(code, /\beval\(|new Function\(/, 'no eval in the bundle');
    assert.doesNotMatch(code, /localStorage|document\.cookie/, 'the token is kept in sessionStorage only');
  });

  it('unknown files are 404; an API without a build says how to make one; the OpenAPI document hides the static routes', async () => {
    for (const url of ['/dashboard/secret.txt', '/dashboard/..%2Fpackage.json', '/dashboard/index.html.map']) {
      const response = await app.inject({ method: 'GET', url });
      assert.equal(response.statusCode, 404, url);
      assert.equal(response.json().error.code, 'TARMAC_NOT_FOUND', url);
    }
    const missing = await unbuilt.inject({ method: 'GET', url: '/dashboard/' });
    assert.equal(missing.statusCode, 404);
    assert.match(missing.json().error.message, /npm run build:dashboard/);
    const paths = Object.keys((await app.inject({ method: 'GET', url: '/docs/json' })).json().paths);
    assert.deepEqual(
      paths.filter((path) => path.startsWith('/dashboard')),
      [],
      'the static routes are not in the OpenAPI document',
    );
    assert.ok(paths.includes('/v1/runs'), 'the list the dashboard reads is documented');
    assert.ok(paths.includes('/v1/environments'), 'and the environments it lists');
  });
});
