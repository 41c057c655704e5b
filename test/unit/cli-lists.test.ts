import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { budgetCommandOf } from '../../cli/commands/budget';
import { environmentLines } from '../../cli/commands/environments';
import { priorityArgument } from '../../cli/commands/land';
import { executionStatus } from '../../cli/commands/list';
import { columns, runListLines, verdictLines } from '../../cli/render';
import type { PanelVerdict } from '../../core/review-types';

describe('tarmac list: the status filter and the table', () => {
  const statuses: { input: string; expected: string | undefined }[] = [
    { input: 'running', expected: 'Running' },
    { input: 'Completed', expected: 'Completed' },
    { input: 'timed-out', expected: 'TimedOut' },
    { input: 'TIMED_OUT', expected: 'TimedOut' },
    { input: 'cancelled', expected: undefined },
    { input: 'sleeping', expected: undefined },
  ];
  for (const { input, expected } of statuses) it(`--status ${input} → ${expected ?? 'refused'}`, () => assert.equal(executionStatus(input), expected));

  it('columns as wide as their widest cell; a missing field is "-"; times to the second', () => {
    assert.deepEqual(
      runListLines([
        { id: 'land.app.main.0123', kind: 'landing', workflowStatus: 'RUNNING', startTime: '2026-12-01T19:00:03.123Z', phase: 'gate', target: 'main' },
        { id: 'review.app.9', kind: 'review-panel', workflowStatus: 'COMPLETED', startTime: '2026-12-01T18:00:00.000Z' },
      ]),
      [
        'ID                  KIND          STATUS     PHASE  OUTCOME  TARGET  STARTED',
        'land.app.main.0123  landing       RUNNING    gate   -        main    2026-12-01T19:00:03Z',
        'review.app.9        review-panel  COMPLETED  -      -        -       2026-12-01T18:00:00Z',
      ],
    );
    assert.deepEqual(runListLines([]), ['no runs match']);
    assert.deepEqual(
      columns([
        ['a', 'bb'],
        ['ccc', ''],
      ]),
      ['a    bb', 'ccc'],
    );
  });
});

describe('tarmac budget: the command an option line asks for', () => {
  const cases: { name: string; action: string; values: Record<string, string>; expected: unknown }[] = [
    { name: 'stop', action: 'stop', values: {}, expected: { action: 'stop' } },
    { name: 'tokens', action: 'extend', values: { tokens: '10000' }, expected: { action: 'extend', tokens: 10_000 } },
    {
      name: 'every amount, the wall time as a duration',
      action: 'extend',
      values: { tokens: '1', 'cost-usd': '2.50', sessions: '3', wall: '90s' },
      expected: { action: 'extend', tokens: 1, costUsd: 2.5, sessions: 3, wallMs: 90_000 },
    },
  ];
  for (const { name, action, values, expected } of cases) it(name, () => assert.deepEqual(budgetCommandOf(action, values), expected));
});

describe("tarmac review: a panel's verdict", () => {
  it('the decision, the cache, each reviewer, the blocking findings and the spend', () => {
    const verdict: PanelVerdict = {
      status: 'changes-requested',
      summary: '1 blocking finding',
      treeSha: 'abcdef0123456789',
      panel: 'script-trio',
      cache: 'partial',
      restored: ['script#reviewer-a'],
      misses: [],
      reviewers: [
        { harnessModel: 'script#reviewer-a', source: 'cache', status: 'delivered' },
        { harnessModel: 'script#reviewer-b', source: 'session', status: 'delivered', sessionStatus: 'delivered', attempts: 2, respawns: 1 },
        { harnessModel: 'script#crash', source: 'session', status: 'errored', sessionStatus: 'crashed', attempts: 3, respawns: 2, reason: 'crashed 3 times' },
      ],
      quorum: 2,
      delivered: 2,
      missing: ['script#crash'],
      errored: ['script#crash'],
      unavailable: [],
      findings: [],
      blocking: [
        { file: 'src/a.js', line: 3, severity: 'blocking', message: 'eval of input', fingerprint: 'f', votes: ['script#reviewer-a', 'script#reviewer-b'] },
      ],
      sessionsStarted: 2,
      meters: { sessionsSpawned: 5, respawns: 3, inputTokens: 12_000, outputTokens: 800, costUsd: 0.05 },
    };
    assert.deepEqual(verdictLines(verdict), [
      'verdict: changes-requested — 1 blocking finding',
      'panel script-trio on tree abcdef0: REVIEW_CACHE=partial (restored: script#reviewer-a); 2 verdict(s), quorum 2',
      '  ✓ script#reviewer-a delivered (from the cache)',
      '  ✓ script#reviewer-b delivered (session delivered, 2 attempt(s), 1 respawn(s))',
      '  ✗ script#crash errored (session crashed, 3 attempt(s), 2 respawn(s)): crashed 3 times',
      'findings: 0, blocking 1',
      '  ✗ src/a.js:3 eval of input (script#reviewer-a, script#reviewer-b)',
      'meters: tokens 12k in / 800 out · cost $0.0500 · sessions 2 · containers 5 (respawns 3)',
    ]);
  });
});

describe('tarmac land --priority: a lane of the target queue', () => {
  const cases: { input: string; expected: number | undefined }[] = [
    { input: '0', expected: 0 },
    { input: '5', expected: 5 },
    { input: '+7', expected: 7 },
    { input: '-100', expected: -100 },
    { input: '100', expected: 100 },
    { input: '101', expected: undefined },
    { input: '-101', expected: undefined },
    { input: '1.5', expected: undefined },
    { input: '05', expected: undefined },
    { input: 'high', expected: undefined },
    { input: '', expected: undefined },
  ];
  for (const { input, expected } of cases) {
    it(`--priority "${input}" → ${expected ?? 'refused, naming the option'}`, () => {
      if (expected === undefined) assert.throws(() => priorityArgument(input), /^UsageError: land: --priority must be a whole number from -100 to 100, not "/);
      else assert.equal(priorityArgument(input), expected);
    });
  }
});

describe('tarmac environments: one environment a row', () => {
  it('the short key as step details name it, the repository, the size, the last use to the second, the runs holding it', () => {
    const environment = (digit: string, repo: string, sizeBytes: number, lastUsedAt: string, usedBy: string[]) => ({
      key: `sha256:${digit.repeat(64)}`,
      repo,
      baseImage: 'tarmac/runner:local',
      sizeBytes,
      builtAt: '2026-01-01T00:00:00.000Z',
      lastUsedAt,
      buildMs: 1000,
      usedBy,
      builtBy: { runId: 'land.a' },
      inputs: [],
      products: ['node_modules'],
      egress: [],
      declaration: { source: 'gate-file' as const, file: '.config/tarmac/land-gate.json', setup: ['npm ci'], inputs: ['package-lock.json'], envNames: [] },
    });
    assert.deepEqual(
      environmentLines([
        environment('a', '/srv/app.git', 340 * 1024 ** 2, '2026-01-05T10:00:03.123Z', ['land.app.2', 'land.app.3']),
        environment('b', 'file:///srv/other.git', 1536, '2026-01-04T00:00:00.000Z', []),
      ]),
      [
        'KEY           REPO                   SIZE     LAST USED             RUNS USING IT',
        'aaaaaaaaaaaa  /srv/app.git           340 MiB  2026-01-05T10:00:03Z  land.app.2, land.app.3',
        'bbbbbbbbbbbb  file:///srv/other.git  1.5 KiB  2026-01-04T00:00:00Z  -',
      ],
    );
    assert.deepEqual(environmentLines([]), ["no environment is cached on the API's host"]);
  });
});
