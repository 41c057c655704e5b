import type { QueueTicket } from '../core/batch-types';

export type { QueueTicket } from '../core/batch-types';

/**
 * Speculative batches (issue 17): the target queue stacks the next N admitted landings on the
 * target, gates the stack's head once and fast-forwards the target to it when it is green. A red
 * stack is bisected by prefix: every prefix of the stack is a tree that could be the target's next
 * value, so a green prefix merges as it is (a fast-forward to a tested tree), and the first red
 * prefix names the culprit — the member that prefix adds.
 *
 * Pure: the batch workflow feeds the results of the prefixes it gated and does what this says.
 */

/** A gate result of one prefix of the stack (its length → green or red). */
export type PrefixResults = Readonly<Record<number, 'green' | 'red'>>;

type BisectStep =
  /** Gate the stack's first `prefix` members (their stacked head's tree). */
  | { kind: 'gate'; prefix: number }
  /**
   * Decided: merge the first `green` members (0: nothing), and — when the stack was red — the
   * member at index `culprit` (0-based) is the first whose prefix is red. Members after it are
   * restacked on what merged and gated again.
   */
  | { kind: 'decided'; green: number; culprit?: number };

/**
 * The next step for a stack of `size` members given the prefixes gated so far. The whole stack
 * first; red → halve between the longest green prefix known (or none) and the shortest red one,
 * until they are neighbours. A culprit among n members is found in at most ⌈log2 n⌉ + 1 rounds.
 */
export function bisectStep(size: number, results: PrefixResults): BisectStep {
  if (!Number.isInteger(size) || size < 1) throw new Error(`a batch has at least one member (got ${size})`);
  const full = results[size];
  if (full === undefined) return { kind: 'gate', prefix: size };
  if (full === 'green') return { kind: 'decided', green: size };
  let green = 0;
  let red = size;
  for (const [key, value] of Object.entries(results)) {
    const length = Number(key);
    if (value === 'green' && length > green && length < red) green = length;
  }
  for (const [key, value] of Object.entries(results)) {
    const length = Number(key);
    if (value === 'red' && length < red && length > green) red = length;
  }
  if (red === green + 1) return { kind: 'decided', green, culprit: red - 1 };
  return { kind: 'gate', prefix: Math.floor((green + red) / 2) };
}

/** Rounds a bisection of `size` members needs at most to name a culprit: ⌈log2 size⌉ + 1. */
export function maxBisectRounds(size: number): number {
  return Math.ceil(Math.log2(size)) + 1;
}

/** Where a ticket goes in the waiting line: by lane (highest first), then by arrival. */
export function ticketPosition(waiting: readonly QueueTicket[], ticket: QueueTicket): number {
  const index = waiting.findIndex((other) => other.lane < ticket.lane || (other.lane === ticket.lane && other.seq > ticket.seq));
  return index < 0 ? waiting.length : index;
}

/**
 * The next batch to start from the head of the waiting line: the first ticket and the batchable
 * tickets right behind it on the same host, in line order, up to the first ticket's batch size. Only
 * the head of the line leads (a batch in flight is never reordered; a later lane never jumps a
 * batch already started). A batchable landing that waited alone is a batch of one: its head was
 * verified on a target that has moved since, and the batch restacks and gates it in one round (its
 * culprit path is a fixup round, where merging alone would make a red re-gate final). None when the
 * head of the line cannot be batched (it merges itself).
 */
export function nextBatch(waiting: readonly QueueTicket[]): QueueTicket[] {
  const [first] = waiting;
  if (!first?.batch || first.batch.size < 2) return [];
  const { size, hostId } = first.batch;
  const members: QueueTicket[] = [];
  // Contiguous from the head: a landing that cannot be batched keeps its place, and those behind it wait.
  for (const ticket of waiting) {
    if (members.length >= size || !ticket.batch || ticket.batch.hostId !== hostId || ticket.batch.size < 2) break;
    members.push(ticket);
  }
  return members;
}

/**
 * When a waiting landing can expect its turn to be over (landed, or its batch decided), from the
 * queue's recent turns: the turn in flight finishes in (median − elapsed), then one turn per batch
 * ahead of it and its own. `position`: 0-based in the waiting line; `batchSize`: 1 when the line
 * is not batched. Undefined until the queue has timed a turn.
 */
export function queueEta(input: {
  position: number;
  batchSize: number;
  recentTurnMs: readonly number[];
  inFlightForMs?: number;
}): { etaMs: number; turnsAhead: number; medianTurnMs: number } | undefined {
  const { position, batchSize, recentTurnMs, inFlightForMs } = input;
  if (recentTurnMs.length === 0) return undefined;
  const sorted = [...recentTurnMs].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const medianTurnMs = sorted.length % 2 === 1 ? sorted[middle]! : Math.round((sorted[middle - 1]! + sorted[middle]!) / 2);
  const turnsAhead = Math.floor(position / Math.max(1, batchSize)) + (inFlightForMs === undefined ? 0 : 1);
  const inFlightLeft = inFlightForMs === undefined ? 0 : Math.max(0, medianTurnMs - inFlightForMs);
  const queuedTurns = Math.floor(position / Math.max(1, batchSize));
  return { etaMs: inFlightLeft + (queuedTurns + 1) * medianTurnMs, turnsAhead, medianTurnMs };
}
