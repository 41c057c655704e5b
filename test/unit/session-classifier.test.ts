import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifySession, type SessionClass, type SessionEndFacts } from '../../policies/session-classifier';

const base: SessionEndFacts = {
  exitCode: 0,
  oomKilled: false,
  timedOut: false,
  hostLost: false,
  sawFirstTurn: true,
  result: 'valid',
  collected: true,
  budgetExceeded: false,
};

const table: { name: string; input: Partial<SessionEndFacts>; expected: SessionClass }[] = [
  { name: 'exit 0 with a valid result', input: {}, expected: 'delivered' },
  { name: 'valid result but non-zero exit: the evidence decides, not the exit code', input: { exitCode: 1 }, expected: 'delivered' },
  { name: 'finished with a result nobody collected yet', input: { collected: false }, expected: 'done-undelivered' },
  { name: 'exit before the first turn', input: { exitCode: 3, sawFirstTurn: false, result: 'missing' }, expected: 'died-before-first-turn' },
  { name: 'exit 0 before the first turn, no result', input: { sawFirstTurn: false, result: 'missing' }, expected: 'died-before-first-turn' },
  { name: 'non-zero exit after the first turn', input: { exitCode: 1, result: 'missing' }, expected: 'crashed' },
  { name: 'exit 0 after the first turn with no result', input: { result: 'missing' }, expected: 'crashed' },
  { name: 'invalid result', input: { result: 'invalid' }, expected: 'crashed' },
  { name: 'OOM killed', input: { exitCode: 137, oomKilled: true, result: 'missing' }, expected: 'oom' },
  { name: 'OOM wins over a missing first turn', input: { exitCode: 137, oomKilled: true, sawFirstTurn: false, result: 'missing' }, expected: 'oom' },
  { name: 'killed at its deadline', input: { exitCode: null, timedOut: true, result: 'missing' }, expected: 'timeout' },
  { name: 'host lost', input: { exitCode: null, hostLost: true, result: 'missing' }, expected: 'lost-host' },
  { name: 'delivered but crossed the budget', input: { budgetExceeded: true }, expected: 'budget-exhausted' },
  {
    name: 'nothing started: image or key missing',
    input: { unavailable: true, result: 'missing', exitCode: null, sawFirstTurn: false },
    expected: 'agent-unavailable',
  },
  {
    name: 'a CLI that failed after its gateway refused a request for the budget',
    input: { budgetExceeded: true, result: 'invalid', exitCode: 1 },
    expected: 'budget-exhausted',
  },
  { name: 'a budget refusal, then the container timed out', input: { budgetExceeded: true, timedOut: true }, expected: 'timeout' },
  {
    name: 'a CLI that failed after its gateway refused a model off the list',
    input: { modelRefused: true, result: 'invalid', exitCode: 1 },
    expected: 'model-refused',
  },
  { name: 'a refused model, whatever the CLI delivered after it', input: { modelRefused: true }, expected: 'model-refused' },
];

describe('classifySession', () => {
  for (const { name, input, expected } of table) it(name, () => assert.equal(classifySession({ ...base, ...input }), expected));
});
