import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fixOutcomeLines } from '../../cli/render';
import type { FixOutcome } from '../../core/fix-types';

const outcome = (fields: Partial<FixOutcome>): FixOutcome => ({
  outcome: 'fixed',
  summary: 'done',
  runId: 'fix.x',
  intent: 'boot-fix',
  routedTo: 'implementer',
  reproCommand: 'make start-all',
  reproSource: 'request',
  reproReason: "the request pastes make's error",
  groundingFiles: ['Makefile', 'mk/run.mk'],
  reproExitCode: 0,
  repairAttempts: 0,
  verifyFailed: false,
  playbookUsed: 'make-target-alias',
  filesChanged: ['mk/run.mk'],
  commandFailures: [],
  circuitBreakerTriggered: false,
  failureType: null,
  fixBranch: 'tarmac/fix/fix.x',
  sessions: [],
  meters: { capsulesRun: 1, containersRun: 3, agentSessions: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, wallTimeMs: 1000 },
  ...fields,
});

describe('tarmac fix: the outcome says where the repro came from and what was read', () => {
  it('a repro from the request', () => {
    const lines = fixOutcomeLines(outcome({}));
    assert.ok(lines.includes("repro chosen (from the request's words): the request pastes make's error"), lines.join('\n'));
    assert.ok(lines.includes('grounding files read: Makefile, mk/run.mk'));
  });
  it('no repro: the reason, and no repro line', () => {
    const lines = fixOutcomeLines(
      outcome({ outcome: 'no-repro', reproCommand: '', reproSource: null, reproReason: 'no grounded repro: …', groundingFiles: [], fixBranch: null }),
    );
    assert.ok(lines.includes('repro chosen: no grounded repro: …'), lines.join('\n'));
    assert.equal(
      lines.some((line) => line.startsWith('repro:') || line.startsWith('grounding files')),
      false,
    );
  });
});
