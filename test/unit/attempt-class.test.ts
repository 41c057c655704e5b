import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SessionAttemptReport, SessionRole } from '../../core/session-types';
import { attemptClassOf } from '../../policies/attempt-class';

const report = (over: Partial<SessionAttemptReport> = {}): SessionAttemptReport => ({
  attempt: 1,
  harnessModel: 'script#fixer',
  containerId: 'c',
  exitCode: 0,
  oomKilled: false,
  timedOut: false,
  reattached: false,
  foundFinished: false,
  durationMs: 10,
  sawFirstTurn: true,
  result: { status: 'ok', summary: 'done', usage: { inputTokens: 0, outputTokens: 0, costUsd: 0 } },
  commitsAdded: 1,
  headSha: 'h',
  logRef: 'l',
  ...over,
});

describe('attemptClassOf (classifier, then the evidence gate)', () => {
  const table: { name: string; seen: SessionAttemptReport; role: SessionRole; hostLost?: boolean; expected: string }[] = [
    { name: 'a fixer with a commit delivered', seen: report(), role: 'fixer', expected: 'delivered' },
    { name: 'a fixer claiming success with no commit', seen: report({ commitsAdded: 0 }), role: 'fixer', expected: 'no-evidence' },
    { name: 'a reviewer needs no commit', seen: report({ commitsAdded: 0 }), role: 'reviewer', expected: 'delivered' },
    {
      name: 'a reviewer whose result says error has not reviewed (never "no findings")',
      seen: report({ commitsAdded: 0, result: { status: 'error', summary: 'API error', usage: { inputTokens: 5, outputTokens: 0, costUsd: 0 } } }),
      role: 'reviewer',
      expected: 'no-evidence',
    },
    {
      name: 'a reviewer blocked has not reviewed',
      seen: report({ commitsAdded: 0, result: { status: 'blocked', summary: 'cannot read', usage: { inputTokens: 0, outputTokens: 0, costUsd: 0 } } }),
      role: 'reviewer',
      expected: 'no-evidence',
    },
    { name: 'a resolver that left its rebase unfinished', seen: report({ workspaceState: 'rebasing' }), role: 'resolver', expected: 'no-evidence' },
    {
      name: 'a result.json missing after the first turn',
      seen: report({ result: undefined, resultProblem: 'result.json is missing', exitCode: 1 }),
      role: 'fixer',
      expected: 'crashed',
    },
    {
      name: 'nothing before the first turn',
      seen: report({ result: undefined, resultProblem: 'result.json is missing', exitCode: 1, sawFirstTurn: false }),
      role: 'fixer',
      expected: 'died-before-first-turn',
    },
    {
      name: 'the gateway refused for the budget',
      seen: report({ modelUsage: { inputTokens: 1, outputTokens: 1, costUsd: 0, requests: 2, budgetRefusals: 1 } }),
      role: 'fixer',
      expected: 'budget-exhausted',
    },
    {
      name: 'the gateway refused the model the CLI asked for',
      seen: report({
        modelUsage: { inputTokens: 0, outputTokens: 0, costUsd: 0, requests: 0, budgetRefusals: 0, refusedModel: 'model "m" is not on the list' },
        result: undefined,
        exitCode: 1,
      }),
      role: 'reviewer',
      expected: 'model-refused',
    },
    {
      name: 'the worker could not start it',
      seen: report({ unavailable: 'key K is not set', result: undefined, exitCode: null, sawFirstTurn: false }),
      role: 'fixer',
      expected: 'agent-unavailable',
    },
    {
      name: 'an agent that asks waits for the answer (no commit needed, never no-evidence)',
      seen: report({
        commitsAdded: 0,
        workspaceState: 'rebasing',
        result: { status: 'ok', summary: 'first a question', questions: ['keep which?'], usage: { inputTokens: 0, outputTokens: 0, costUsd: 0 } },
      }),
      role: 'resolver',
      expected: 'asked',
    },
    {
      name: 'a reviewer that asks has asked too',
      seen: report({
        commitsAdded: 0,
        result: { status: 'ok', summary: 's', findings: [], questions: ['is this on purpose?'], usage: { inputTokens: 0, outputTokens: 0, costUsd: 0 } },
      }),
      role: 'reviewer',
      expected: 'asked',
    },
    {
      name: 'an empty questions list asks nothing',
      seen: report({ result: { status: 'ok', summary: 'done', questions: [], usage: { inputTokens: 0, outputTokens: 0, costUsd: 0 } } }),
      role: 'fixer',
      expected: 'delivered',
    },
    {
      name: 'a crash with questions in no result is a crash',
      seen: report({ result: undefined, resultProblem: 'result.json is missing', exitCode: 1 }),
      role: 'fixer',
      expected: 'crashed',
    },
    { name: 'its host never picked it up', seen: report({ result: undefined, exitCode: null }), role: 'fixer', hostLost: true, expected: 'lost-host' },
  ];
  for (const { name, seen, role, hostLost, expected } of table) it(name, () => assert.equal(attemptClassOf(seen, role, hostLost ?? false), expected));
});
