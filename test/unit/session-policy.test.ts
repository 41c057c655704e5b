import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nextRung } from '../../policies/model-ladder';
import { decideNext, type AttemptRecord, type SessionDecision } from '../../policies/session-policy';

const ladder = ['a#1', 'b#2', 'c#3'];
const attempt = (harnessModel: string, kind: AttemptRecord['class']): AttemptRecord => ({ harnessModel, class: kind });

const table: { name: string; attempts: AttemptRecord[]; maxRespawns?: number; maxAttempts?: number; expected: Partial<SessionDecision> }[] = [
  { name: 'delivered → done', attempts: [attempt('a#1', 'delivered')], expected: { action: 'done' } },
  { name: 'asked → ask: the run answers, no successor, no escalation', attempts: [attempt('a#1', 'asked')], expected: { action: 'ask' } },
  {
    name: 'asked even at the attempt limit → ask (not give-up)',
    attempts: [attempt('a#1', 'crashed'), attempt('a#1', 'asked')],
    maxAttempts: 2,
    expected: { action: 'ask' },
  },
  { name: 'done-undelivered → collect', attempts: [attempt('a#1', 'done-undelivered')], expected: { action: 'collect' } },
  {
    name: 'first failure → respawn the same model',
    attempts: [attempt('a#1', 'died-before-first-turn')],
    expected: { action: 'respawn', harnessModel: 'a#1' },
  },
  {
    name: 'same class again beyond maxRespawns → escalate one index',
    attempts: [attempt('a#1', 'crashed'), attempt('a#1', 'crashed')],
    expected: { action: 'escalate', harnessModel: 'b#2', fromIndex: 0, toIndex: 1 },
  },
  {
    name: 'different classes on one model → respawn (not yet repeated)',
    attempts: [attempt('a#1', 'crashed'), attempt('a#1', 'timeout')],
    expected: { action: 'respawn', harnessModel: 'a#1' },
  },
  {
    name: 'escalation continues one index at a time',
    attempts: [attempt('a#1', 'crashed'), attempt('a#1', 'crashed'), attempt('b#2', 'crashed'), attempt('b#2', 'crashed')],
    maxAttempts: 10,
    expected: { action: 'escalate', harnessModel: 'c#3', fromIndex: 1, toIndex: 2 },
  },
  {
    name: 'top of the ladder → give up',
    attempts: [attempt('c#3', 'crashed'), attempt('c#3', 'crashed')],
    expected: { action: 'give-up' },
  },
  { name: 'off the ladder → give up after respawns', attempts: [attempt('x#9', 'oom'), attempt('x#9', 'oom')], expected: { action: 'give-up' } },
  { name: 'maxRespawns 0 → escalate at once', attempts: [attempt('a#1', 'timeout')], maxRespawns: 0, expected: { action: 'escalate', harnessModel: 'b#2' } },
  { name: 'attempt limit → give up', attempts: [attempt('a#1', 'crashed'), attempt('a#1', 'timeout')], maxAttempts: 2, expected: { action: 'give-up' } },
  {
    name: 'lost host → respawn without counting toward escalation',
    attempts: [attempt('a#1', 'lost-host'), attempt('a#1', 'lost-host'), attempt('a#1', 'lost-host')],
    expected: { action: 'respawn', harnessModel: 'a#1' },
  },
  {
    name: 'no evidence counts as a failure class',
    attempts: [attempt('a#1', 'no-evidence'), attempt('a#1', 'no-evidence')],
    expected: { action: 'escalate', harnessModel: 'b#2' },
  },
  { name: 'budget exhausted → give up (the run pauses or stops)', attempts: [attempt('a#1', 'budget-exhausted')], expected: { action: 'give-up' } },
  {
    name: 'agent unavailable → the next rung at once, never the same one again',
    attempts: [attempt('a#1', 'agent-unavailable')],
    expected: { action: 'escalate', harnessModel: 'b#2', fromIndex: 0, toIndex: 1 },
  },
  {
    name: 'agent unavailable off the ladder → the first rung',
    attempts: [attempt('x#9', 'agent-unavailable')],
    expected: { action: 'escalate', harnessModel: 'a#1', toIndex: 0 },
  },
  {
    name: 'agent unavailable: rungs already found unavailable are skipped',
    attempts: [attempt('b#2', 'agent-unavailable'), attempt('a#1', 'agent-unavailable')],
    expected: { action: 'escalate', harnessModel: 'c#3', toIndex: 2 },
  },
  { name: 'agent unavailable at the top → give up', attempts: [attempt('c#3', 'agent-unavailable')], expected: { action: 'give-up' } },
  {
    name: 'agent unavailable: the decision names what was missing and the rung it moved to',
    attempts: [{ harnessModel: 'a#1', class: 'agent-unavailable', unavailable: 'a#1 cannot run: key K is not set' }],
    expected: {
      action: 'escalate',
      harnessModel: 'b#2',
      reason: 'a#1 cannot run on this worker (a#1 cannot run: key K is not set): skipped, moved to rung 1 b#2',
    },
  },
  {
    name: 'a repeated failure escalates past a rung already found unavailable (it gets no second step)',
    attempts: [attempt('b#2', 'agent-unavailable'), attempt('a#1', 'crashed'), attempt('a#1', 'crashed')],
    maxAttempts: 10,
    expected: { action: 'escalate', harnessModel: 'c#3', fromIndex: 0, toIndex: 2 },
  },
  {
    name: 'a repeated failure below rungs that are all unavailable → give up, saying none can run',
    attempts: [attempt('b#2', 'agent-unavailable'), attempt('c#3', 'agent-unavailable'), attempt('a#1', 'crashed'), attempt('a#1', 'crashed')],
    maxAttempts: 10,
    expected: { action: 'give-up', reason: 'crashed repeated on a#1, which has no higher rung on the ladder that can run' },
  },
  {
    name: 'rungs that could not start count toward no attempt limit (they ran no container)',
    attempts: [attempt('a#1', 'agent-unavailable'), attempt('b#2', 'crashed')],
    maxAttempts: 1,
    expected: { action: 'give-up', reason: '1 attempts reached the limit of 1' },
  },
  {
    name: 'the model gateway refused the model → give up at once, naming it (no respawn, no rung)',
    attempts: [{ harnessModel: 'a#1', class: 'model-refused', refused: 'model "m-9" is not on the operator\'s list of anthropic models' }],
    expected: {
      action: 'give-up',
      reason: 'the model gateway refused the model a#1 asked for: model "m-9" is not on the operator\'s list of anthropic models',
    },
  },
  {
    name: 'agent unavailable does not wait for the attempt limit',
    attempts: [attempt('a#1', 'agent-unavailable')],
    maxAttempts: 1,
    expected: { action: 'escalate', harnessModel: 'b#2' },
  },
];

describe('decideNext', () => {
  for (const { name, attempts, maxRespawns, maxAttempts, expected } of table) {
    it(name, () => {
      const decision = decideNext({ attempts, ladder, maxRespawns: maxRespawns ?? 1, maxAttempts: maxAttempts ?? 6 });
      for (const [key, value] of Object.entries(expected))
        assert.equal((decision as Record<string, unknown>)[key], value, `${key} in ${JSON.stringify(decision)}`);
    });
  }
});

describe('nextRung', () => {
  const cases = [
    { input: 'a#1', expected: { harnessModel: 'b#2', index: 1 } },
    { input: 'b#2', expected: { harnessModel: 'c#3', index: 2 } },
    { input: 'c#3', expected: undefined },
    { input: 'z#0', expected: undefined },
  ];
  for (const { input, expected } of cases) it(`${input} → ${JSON.stringify(expected)}`, () => assert.deepEqual(nextRung(ladder, input), expected));
});
