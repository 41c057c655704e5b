import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { continueAsNewReason, defaultHistoryBudget } from '../../policies/history-budget';
import { RunJournal } from '../../workflows/run-journal';

describe('continueAsNewReason', () => {
  const table: { name: string; facts: Parameters<typeof continueAsNewReason>[0]; expected: RegExp | undefined }[] = [
    { name: 'a short history', facts: { length: 300, sizeBytes: 200_000, suggested: false, journalSize: 120 }, expected: undefined },
    { name: 'Temporal suggests it', facts: { length: 300, sizeBytes: 200_000, suggested: true }, expected: /Temporal suggests it/ },
    { name: 'at the event budget', facts: { length: 10_000, sizeBytes: 1, suggested: false }, expected: /10000 events \(continues at 10000\)/ },
    { name: 'at the byte budget', facts: { length: 10, sizeBytes: 10 * 1024 * 1024, suggested: false }, expected: /10485760 bytes/ },
    { name: 'the journal half full', facts: { length: 10, sizeBytes: 1, suggested: false, journalSize: 1_000 }, expected: /journal keeps 1000 events/ },
    { name: 'just under every budget', facts: { length: 9_999, sizeBytes: 10 * 1024 * 1024 - 1, suggested: false, journalSize: 999 }, expected: undefined },
  ];
  for (const { name, facts, expected } of table) {
    it(name, () => {
      const reason = continueAsNewReason(facts);
      if (expected) assert.match(reason ?? '', expected);
      else assert.equal(reason, undefined);
    });
  }
  it('a recipe may set a lower event budget', () =>
    assert.match(
      continueAsNewReason({ length: 25, sizeBytes: 1, suggested: false }, { ...defaultHistoryBudget, events: 20 }) ?? '',
      /25 events \(continues at 20\)/,
    ));
});

describe('RunJournal across continue-as-new', () => {
  it('numbering goes on, the page points at the earlier run, and a report seen before is still recorded once', () => {
    const first = new RunJournal();
    first.record({ kind: 'phase', phase: 'validate' });
    first.record({ kind: 'session', sessionId: 's1', state: 'spawned' } as never, 'spawned:s1');
    const handoff = first.handoff('run-1');
    assert.deepEqual(handoff, { runId: 'run-1', lastSeq: 2, keys: ['spawned:s1'] });
    const next = new RunJournal({}, handoff);
    next.record({ kind: 'session', sessionId: 's1', state: 'spawned' } as never, 'spawned:s1');
    next.record({ kind: 'phase', phase: 'gate' });
    const page = next.page(0);
    assert.deepEqual(
      page.events.map((event) => event.seq),
      [3],
    );
    assert.equal(page.lastSeq, 3);
    assert.deepEqual(page.earlier, { runId: 'run-1', throughSeq: 2 });
    assert.equal(first.page(0).earlier, undefined);
  });
  it('hands on only the newest keys', () => {
    const journal = new RunJournal();
    for (let index = 0; index < 600; index += 1) journal.record({ kind: 'phase', phase: 'gate' }, `k${index}`);
    const { keys } = journal.handoff('run-1', 512);
    assert.equal(keys.length, 512);
    assert.equal(keys.at(-1), 'k599');
  });
});
