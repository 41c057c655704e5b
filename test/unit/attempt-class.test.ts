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
    { name: 'a resolver that left its rebase unfinished', seen: report({ workspaceState: 'rebasing' }), role: 'resolver', expected: 'no-evidence' },
    { name: 'a result.json missing after the first turn', seen: report({ result: undefined, resultProblem: 'result.json is missing', exitCode: 1 }), role: 'fixer', expected: 'crashed' },
    { name: 'nothing before the first turn', seen: report({ result: undefined, resultProblem: 'result.json is missing', exitCode: 1, sawFirstTurn: false }), role: 'fixer', expected: 'died-before-first-turn' },
    { name: 'the gateway refused for the budget', seen: report({ modelUsage: { inputTokens: 1, outputTokens: 1, costUsd: 0, requests: 2, budgetRefusals: 1 } }), role: 'fixer', expected: 'budget-exhausted' },
    { name: 'the worker could not start it', seen: report({ unavailable: 'key K is not set', result: undefined, exitCode: null, sawFirstTurn: false }), role: 'fixer', expected: 'agent-unavailable' },
    { name: 'its host never picked it up', seen: report({ result: undefined, exitCode: null }), role: 'fixer', hostLost: true, expected: 'lost-host' },
  ];
  for (const { name, seen, role, hostLost, expected } of table) it(name, () => assert.equal(attemptClassOf(seen, role, hostLost ?? false), expected));
});
