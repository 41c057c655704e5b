import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bisectStep, maxBisectRounds, nextBatch, queueEta, ticketPosition, type PrefixResults, type QueueTicket } from '../../policies/batch';

/** Runs the bisection against a stack whose prefix of length n is red exactly when it holds a bad member. */
function bisect(size: number, bad: Set<number>): { rounds: number; green: number; culprit?: number; gated: number[] } {
  const results: Record<number, 'green' | 'red'> = {};
  const gated: number[] = [];
  for (;;) {
    const step = bisectStep(size, results);
    if (step.kind === 'decided') return { rounds: gated.length, green: step.green, ...(step.culprit === undefined ? {} : { culprit: step.culprit }), gated };
    assert.equal(results[step.prefix], undefined, `prefix ${step.prefix} gated twice`);
    gated.push(step.prefix);
    results[step.prefix] = [...bad].some((index) => index < step.prefix) ? 'red' : 'green';
  }
}

describe('bisectStep (speculative batches, bisection by prefix)', () => {
  const table: { name: string; size: number; results: PrefixResults; expected: ReturnType<typeof bisectStep> }[] = [
    { name: 'nothing gated: the whole stack', size: 4, results: {}, expected: { kind: 'gate', prefix: 4 } },
    { name: 'the whole stack green: merge all', size: 4, results: { 4: 'green' }, expected: { kind: 'decided', green: 4 } },
    { name: 'red: halve', size: 4, results: { 4: 'red' }, expected: { kind: 'gate', prefix: 2 } },
    { name: 'first half green: halve the rest', size: 4, results: { 4: 'red', 2: 'green' }, expected: { kind: 'gate', prefix: 3 } },
    { name: 'first half red: halve it', size: 4, results: { 4: 'red', 2: 'red' }, expected: { kind: 'gate', prefix: 1 } },
    {
      name: 'neighbours: the culprit is the member the red prefix adds',
      size: 4,
      results: { 4: 'red', 2: 'green', 3: 'red' },
      expected: { kind: 'decided', green: 2, culprit: 2 },
    },
    {
      name: 'the first member alone is red: nothing merges',
      size: 4,
      results: { 4: 'red', 2: 'red', 1: 'red' },
      expected: { kind: 'decided', green: 0, culprit: 0 },
    },
    { name: 'a batch of one red: it is the culprit', size: 1, results: { 1: 'red' }, expected: { kind: 'decided', green: 0, culprit: 0 } },
    {
      name: 'results outside the window are ignored (a red longer than the shortest red)',
      size: 8,
      results: { 8: 'red', 4: 'red', 6: 'red' },
      expected: { kind: 'gate', prefix: 2 },
    },
  ];
  for (const row of table) it(row.name, () => assert.deepEqual(bisectStep(row.size, row.results), row.expected));

  it('refuses an empty batch', () => assert.throws(() => bisectStep(0, {}), /at least one member/));

  it('finds any single culprit among 1..8 members within ⌈log2 n⌉ + 1 rounds; the members before it merge', () => {
    for (let size = 1; size <= 8; size += 1) {
      for (let culprit = 0; culprit < size; culprit += 1) {
        const found = bisect(size, new Set([culprit]));
        assert.equal(found.culprit, culprit, `size ${size}, culprit ${culprit}`);
        assert.equal(found.green, culprit, 'every member before the culprit is in the green prefix');
        assert.ok(found.rounds <= maxBisectRounds(size), `size ${size}, culprit ${culprit}: ${found.rounds} rounds (${found.gated.join(',')})`);
      }
      assert.deepEqual(bisect(size, new Set()), { rounds: 1, green: size, gated: [size] }, 'a green stack takes one round');
    }
  });

  it('with two culprits names the first', () => {
    assert.equal(bisect(8, new Set([2, 6])).culprit, 2);
  });

  it('maxBisectRounds: 4 → 3, 1 → 1, 5 → 4', () => {
    assert.deepEqual([maxBisectRounds(4), maxBisectRounds(1), maxBisectRounds(5)], [3, 1, 4]);
  });
});

const ticket = (landingId: string, seq: number, lane = 0, batch?: Partial<QueueTicket['batch']>): QueueTicket => ({
  landingId,
  seq,
  lane,
  ...(batch ? { batch: { repo: 'r', target: 'main', size: 4, hostId: 'h1', base: 'b', headSha: 'h', ...batch } } : {}),
});

describe('ticketPosition (priority lanes, then arrival)', () => {
  const line = [ticket('a', 1, 5), ticket('b', 2, 0), ticket('c', 4, 0)];
  const table: { name: string; ticket: QueueTicket; expected: number }[] = [
    { name: 'same lane, later arrival: at the end', ticket: ticket('d', 5), expected: 3 },
    { name: 'a higher lane goes before lower ones', ticket: ticket('d', 5, 1), expected: 1 },
    { name: 'behind an equal or higher lane that came first', ticket: ticket('d', 5, 5), expected: 1 },
    { name: 'a returning landing keeps its arrival place in its lane', ticket: ticket('d', 3, 0), expected: 2 },
    { name: 'a higher lane than everyone: first', ticket: ticket('d', 9, 7), expected: 0 },
  ];
  for (const row of table) it(row.name, () => assert.equal(ticketPosition(line, row.ticket), row.expected));
});

describe('nextBatch (who goes into the next batch)', () => {
  const table: { name: string; waiting: QueueTicket[]; expected: string[] }[] = [
    { name: 'empty line: none', waiting: [], expected: [] },
    { name: 'the head is not batchable: none (it merges alone)', waiting: [ticket('a', 1), ticket('b', 2, 0, {})], expected: [] },
    { name: 'up to the head’s size, in line order', waiting: [1, 2, 3, 4, 5, 6].map((n) => ticket(`l${n}`, n, 0, {})), expected: ['l1', 'l2', 'l3', 'l4'] },
    { name: 'one batchable landing waiting alone: a batch of one', waiting: [ticket('a', 1, 0, {}), ticket('b', 2)], expected: ['a'] },
    {
      name: 'stops at a landing that cannot be batched (it keeps its place)',
      waiting: [ticket('a', 1, 0, {}), ticket('b', 2, 0, {}), ticket('c', 3), ticket('d', 4, 0, {})],
      expected: ['a', 'b'],
    },
    { name: 'stops at another host', waiting: [ticket('a', 1, 0, {}), ticket('b', 2, 0, { hostId: 'h2' }), ticket('c', 3, 0, {})], expected: ['a'] },
    { name: 'the head’s size rules', waiting: [ticket('a', 1, 0, { size: 2 }), ticket('b', 2, 0, {}), ticket('c', 3, 0, {})], expected: ['a', 'b'] },
  ];
  for (const row of table)
    it(row.name, () =>
      assert.deepEqual(
        nextBatch(row.waiting).map((entry) => entry.landingId),
        row.expected,
      ),
    );
});

describe('queueEta (the queue view: when a waiting landing’s turn should be over)', () => {
  const table: { name: string; input: Parameters<typeof queueEta>[0]; expected: ReturnType<typeof queueEta> }[] = [
    { name: 'no turn timed yet: no estimate', input: { position: 0, batchSize: 1, recentTurnMs: [] }, expected: undefined },
    {
      name: 'first in line, nothing in flight: one turn',
      input: { position: 0, batchSize: 1, recentTurnMs: [10, 30, 20] },
      expected: { etaMs: 20, turnsAhead: 0, medianTurnMs: 20 },
    },
    {
      name: 'third in line one at a time: its turn after two',
      input: { position: 2, batchSize: 1, recentTurnMs: [20] },
      expected: { etaMs: 60, turnsAhead: 2, medianTurnMs: 20 },
    },
    {
      name: 'batches of 4: the fifth waits for one batch',
      input: { position: 4, batchSize: 4, recentTurnMs: [40] },
      expected: { etaMs: 80, turnsAhead: 1, medianTurnMs: 40 },
    },
    {
      name: 'a turn in flight: what is left of it first',
      input: { position: 0, batchSize: 4, recentTurnMs: [40], inFlightForMs: 30 },
      expected: { etaMs: 50, turnsAhead: 1, medianTurnMs: 40 },
    },
    {
      name: 'a turn in flight longer than usual: nothing left of it counted',
      input: { position: 0, batchSize: 1, recentTurnMs: [10, 20], inFlightForMs: 99 },
      expected: { etaMs: 15, turnsAhead: 1, medianTurnMs: 15 },
    },
  ];
  for (const row of table) it(row.name, () => assert.deepEqual(queueEta(row.input), row.expected));
});
