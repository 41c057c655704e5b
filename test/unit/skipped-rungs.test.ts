import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SessionOutcome } from '../../core/session-types';
import { skippedRungs } from '../../policies/skipped-rungs';

const attempt = (n: number, harnessModel: string, cls: string, unavailable?: string) =>
  ({ attempt: n, harnessModel, class: cls, ...(unavailable ? { unavailable } : {}) }) as SessionOutcome['attempts'][number];

describe('skippedRungs (one agent-unavailable step per rung a session passed over)', () => {
  const table: { name: string; outcome: Pick<SessionOutcome, 'attempts' | 'decisions'>; expected: ReturnType<typeof skippedRungs> }[] = [
    { name: 'no rung skipped → no step', outcome: { attempts: [attempt(1, 'a#1', 'delivered')], decisions: [] }, expected: [] },
    {
      name: 'two rungs that cannot run, then one that delivers: a step each, naming what was missing and the rung moved to',
      outcome: {
        attempts: [
          attempt(1, 'a#1', 'agent-unavailable', 'a#1 cannot run: key K is not set'),
          attempt(2, 'b#2', 'agent-unavailable', 'b#2 cannot run: image i is not built'),
          attempt(3, 'c#3', 'delivered'),
        ],
        decisions: [
          { afterAttempt: 1, action: 'escalate', harnessModel: 'b#2', reason: 'r' },
          { afterAttempt: 2, action: 'escalate', harnessModel: 'c#3', reason: 'r' },
          { afterAttempt: 3, action: 'done', reason: 'r' },
        ],
      },
      expected: [
        { name: 'session.fixer:fixer-1 skipped a#1', detail: 'a#1 cannot run: key K is not set; no container was started; moved to b#2' },
        { name: 'session.fixer:fixer-1 skipped b#2', detail: 'b#2 cannot run: image i is not built; no container was started; moved to c#3' },
      ],
    },
    {
      name: 'the last rung cannot run → its step says no rung was left',
      outcome: {
        attempts: [attempt(1, 'c#3', 'agent-unavailable', 'c#3 cannot run: key K is not set')],
        decisions: [{ afterAttempt: 1, action: 'give-up', reason: 'r' }],
      },
      expected: [
        { name: 'session.fixer:fixer-1 skipped c#3', detail: 'c#3 cannot run: key K is not set; no container was started; no rung of the ladder left' },
      ],
    },
  ];
  for (const { name, outcome, expected } of table) it(name, () => assert.deepEqual(skippedRungs('session.fixer:fixer-1', outcome), expected));
});
