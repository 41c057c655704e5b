import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BudgetCommand } from '../../core/session-types';
import { budgetCommandProblem, budgetExhausted, budgetLeft, budgetShare, extendBudget, type BudgetLimits } from '../../policies/budget';

const limits: BudgetLimits = { tokens: 1000, costUsd: 1, sessions: 4, wallMs: 60_000 };
const spend = (over: Partial<{ inputTokens: number; outputTokens: number; costUsd: number; sessionsSpawned: number; wallTimeMs: number }> = {}) => ({
  inputTokens: 0,
  outputTokens: 0,
  costUsd: 0,
  sessionsSpawned: 0,
  wallTimeMs: 0,
  ...over,
});

describe('budgetExhausted', () => {
  const table = [
    { name: 'nothing spent', input: spend(), expected: undefined },
    { name: 'tokens exactly at the limit are not over it', input: spend({ inputTokens: 600, outputTokens: 400 }), expected: undefined },
    { name: 'tokens over the limit', input: spend({ inputTokens: 600, outputTokens: 401 }), expected: 'tokens: 1001 used of 1000' },
    { name: 'cost over', input: spend({ costUsd: 1.5 }), expected: 'cost: $1.5000 spent of $1' },
    { name: 'sessions at the limit: no new one', input: spend({ sessionsSpawned: 4 }), expected: 'sessions: 4 spawned of 4' },
    { name: 'wall time over', input: spend({ wallTimeMs: 61_000 }), expected: 'wall time: 61 s of 60 s' },
    { name: 'tokens are named first when several are over', input: spend({ inputTokens: 2000, costUsd: 5 }), expected: 'tokens: 2000 used of 1000' },
  ];
  for (const { name, input, expected } of table) it(name, () => assert.equal(budgetExhausted(input, limits), expected));
});

describe('budgetLeft', () => {
  const table = [
    { name: 'all of it', input: spend(), expected: { tokens: 1000, costUsd: 1, sessions: 4, wall: '60s' } },
    {
      name: 'part spent',
      input: spend({ inputTokens: 300, outputTokens: 100, costUsd: 0.25, sessionsSpawned: 1, wallTimeMs: 20_500 }),
      expected: { tokens: 600, costUsd: 0.75, sessions: 3, wall: '40s' },
    },
    {
      name: 'never below zero (a child that overran)',
      input: spend({ inputTokens: 5000, costUsd: 3, sessionsSpawned: 9, wallTimeMs: 90_000 }),
      expected: { tokens: 0, costUsd: 0, sessions: 1, wall: '1s' },
    },
  ];
  for (const { name, input, expected } of table) it(name, () => assert.deepEqual(budgetLeft(input, limits), expected));
});

describe('budgetShare', () => {
  const left = { tokens: 1000, costUsd: 1, sessions: 4, wall: '60s' };
  const table = [
    { name: 'one child gets it all', children: 1, expected: left },
    { name: 'three reviewers split tokens and cost, keep the wall clock', children: 3, expected: { tokens: 333, costUsd: 0.333333, sessions: 1, wall: '60s' } },
    { name: 'more children than sessions: still one each', children: 6, expected: { tokens: 166, costUsd: 0.166666, sessions: 1, wall: '60s' } },
    { name: 'zero children is one', children: 0, expected: left },
  ];
  for (const { name, children, expected } of table) it(name, () => assert.deepEqual(budgetShare(left, children), expected));
});

describe('budgetCommandProblem', () => {
  const table: { name: string; command: unknown; paused: boolean; expected: string | undefined }[] = [
    { name: 'extend while paused', command: { action: 'extend', tokens: 100 }, paused: true, expected: undefined },
    { name: 'stop, paused or not', command: { action: 'stop' }, paused: false, expected: undefined },
    { name: 'extend while running', command: { action: 'extend', tokens: 100 }, paused: false, expected: 'the run is not paused for its budget' },
    { name: 'unknown action', command: { action: 'grow' }, paused: true, expected: 'action must be "extend" or "stop"' },
    { name: 'no command', command: undefined, paused: true, expected: 'action must be "extend" or "stop"' },
    { name: 'extend by nothing', command: { action: 'extend' }, paused: true, expected: 'extend needs at least one of tokens, costUsd, sessions, wallMs' },
    { name: 'a negative extension', command: { action: 'extend', costUsd: -1 }, paused: true, expected: 'extensions must be positive numbers' },
    { name: 'a string where a number belongs', command: { action: 'extend', tokens: '9' }, paused: true, expected: 'extensions must be positive numbers' },
  ];
  for (const { name, command, paused, expected } of table) it(name, () => assert.equal(budgetCommandProblem(command as BudgetCommand, paused), expected));
});

describe('extendBudget', () => {
  it('adds each extension to its limit and keeps the rest', () => {
    assert.deepEqual(extendBudget({ ...limits, onExhausted: 'pause' as const }, { action: 'extend', tokens: 500, wallMs: 1000 }), {
      tokens: 1500,
      costUsd: 1,
      sessions: 4,
      wallMs: 61_000,
      onExhausted: 'pause',
    });
  });
});
