import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunEvent, RunEventBody } from '../../core/events';
import { RunJournal } from '../../workflows/run-journal';

const step = (name: string): RunEventBody => ({ kind: 'step', name, status: 'done' });
const phase = (name: string): RunEventBody => ({ kind: 'phase', phase: name });
const question = (id: string): RunEventBody => ({ kind: 'question', id, question: `q ${id}` });

/** Reads the whole journal the way the event stream does: page after page, after the last number seen. */
function readAll(journal: RunJournal, after = 0): RunEvent[] {
  const events: RunEvent[] = [];
  for (;;) {
    const page = journal.page(after, 7);
    events.push(...page.events);
    if (page.events.length === 0 || page.events.at(-1)!.seq >= page.lastSeq) return events;
    after = page.events.at(-1)!.seq;
  }
}

describe('RunJournal: bounded, numbers that only rise', () => {
  it('under the cap nothing is trimmed: 1..n, no gap', () => {
    const journal = new RunJournal({ maxEvents: 50 });
    for (let index = 0; index < 50; index += 1) journal.record(step(`s${index}`));
    assert.deepEqual(
      readAll(journal).map((event) => event.seq),
      Array.from({ length: 50 }, (_unused, index) => index + 1),
    );
  });

  it('past the cap: old detail goes, one trimmed event says how much, phases and the newest stay', () => {
    const journal = new RunJournal({ maxEvents: 20, keepNewest: 10 });
    journal.record(phase('validate'));
    for (let index = 0; index < 15; index += 1) journal.record(step(`a${index}`));
    journal.record(phase('gate'));
    for (let index = 0; index < 10; index += 1) journal.record(step(`b${index}`));
    journal.record({ kind: 'outcome', status: 'landed', summary: 'ok' });
    assert.equal(journal.lastSeq, 28);
    assert.ok(journal.size <= 20, `kept ${journal.size}`);
    const events = readAll(journal);
    const seqs = events.map((event) => event.seq);
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => a - b),
      'in order',
    );
    assert.equal(new Set(seqs).size, seqs.length, 'no repeat');
    assert.deepEqual(
      events.filter((event) => event.kind === 'phase').map((event) => event.kind === 'phase' && event.phase),
      ['validate', 'gate'],
    );
    assert.equal(events.at(-1)!.kind, 'outcome');
    const trimmed = events.filter((event) => event.kind === 'trimmed');
    assert.equal(trimmed.length, 1, 'one summary');
    const summary = trimmed[0] as Extract<RunEvent, { kind: 'trimmed' }>;
    assert.equal(summary.seq, summary.throughSeq, 'it takes the last dropped number');
    assert.equal(summary.dropped, 28 - events.length + 1, 'it counts every event no longer kept');
    assert.match(summary.reason, /at most 20 events/);
    const newest = events.slice(-10).map((event) => event.seq);
    assert.deepEqual(
      newest,
      Array.from({ length: 10 }, (_unused, index) => 19 + index),
      'the newest are all there',
    );
  });

  it('many trims: one summary, whose count adds up, and the journal stays bounded', () => {
    const journal = new RunJournal({ maxEvents: 30 });
    for (let index = 0; index < 1000; index += 1) journal.record(step(`s${index}`));
    const events = readAll(journal);
    assert.ok(events.length <= 30);
    const summaries = events.filter((event): event is Extract<RunEvent, { kind: 'trimmed' }> => event.kind === 'trimmed');
    assert.equal(summaries.length, 1, 'earlier summaries are merged into the latest');
    assert.equal(summaries[0]!.dropped + events.length - 1, 1000, 'kept + dropped = recorded');
  });

  it('a reader that follows with cursors while trims happen never sees a number twice or go back', () => {
    const journal = new RunJournal({ maxEvents: 12, keepNewest: 4 });
    const seen: number[] = [];
    let cursor = 0;
    for (let index = 0; index < 200; index += 1) {
      journal.record(index % 17 === 0 ? phase(`p${index}`) : step(`s${index}`));
      if (index % 5 === 0) {
        for (const event of readAll(journal, cursor)) {
          seen.push(event.seq);
          cursor = event.seq;
        }
      }
    }
    for (const event of readAll(journal, cursor)) seen.push(event.seq);
    assert.deepEqual(
      seen,
      [...new Set(seen)].sort((a, b) => a - b),
      'strictly rising',
    );
    assert.equal(seen.at(-1), 200, 'it reached the end');
  });

  it('when old events are mostly not detail, those go too — but never phases or the outcome', () => {
    const journal = new RunJournal({ maxEvents: 10, keepNewest: 3 });
    journal.record(phase('questions'));
    for (let index = 0; index < 30; index += 1) journal.record(question(`q${index}`));
    const events = readAll(journal);
    assert.ok(journal.size <= 10, `kept ${journal.size}`);
    assert.equal(events[0]!.kind, 'phase');
    assert.deepEqual(
      events.slice(-3).map((event) => event.kind === 'question' && event.id),
      ['q27', 'q28', 'q29'],
    );
  });

  it('a retried report (same key) is recorded once; the remembered keys are bounded', () => {
    const journal = new RunJournal({ maxKeys: 3 });
    const report: RunEventBody = { kind: 'session', sessionId: 's', type: 'spawned' };
    journal.record(report, 'k1');
    journal.record(report, 'k1');
    assert.equal(journal.lastSeq, 1);
    for (const key of ['k2', 'k3', 'k4']) journal.record(report, key);
    journal.record(report, 'k1');
    assert.equal(journal.lastSeq, 5, 'k1 was forgotten after three newer keys');
  });
});
