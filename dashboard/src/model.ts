/**
 * What the run page shows, derived from what the API returns: the status view (GET
 * /v1/landings/:id), the outcome, the journal events of the stream, and each session's own
 * status (GET /v1/runs/<run>.<session>). Pure: no DOM, no fetch (test/unit/dashboard-model.test.ts).
 */
import type {
  GateResult as GateSuiteResult,
  LandingOutcomeView as LandingOutcome,
  LandingView,
  QueueView,
  RunEvent,
  Step as StepRecord,
  WireMeters as Meters,
} from '../../api/schemas';
import type { BatchOutcome } from '../../core/batch-types';
import type { SessionStatusView } from '../../core/session-types';

// The wire types are the API's schemas (api/schemas.ts); a session's status and a batch's outcome
// come through GET /v1/runs/:id, whose `status` and `result` the API passes on untyped.
export type { LandingView, QueueView };

/** What marks a step, a gate result or a session on the page (each shown as a badge and a data-marker). */
export type Marker =
  | 'skipped'
  | 'cached'
  | 'partly-cached'
  | 'respawned'
  | 'reattached'
  | 'superseded'
  | 'escalated'
  | 'failed'
  | 'running'
  | 'asked'
  // A red gate result settled by evidence (policies/flake.ts), and a red a quarantine excused.
  | 'flaky'
  | 'pre-existing'
  | 'failed-again'
  | 'quarantined'
  // The merge queue's lineage of a landing: merged in a speculative batch, named a batch's culprit.
  | 'batched'
  | 'culprit';

interface PhaseEntry {
  phase: string;
  at: string;
  /** Until the next phase (or the outcome); absent while it is the current one. */
  endedAt?: string;
  current: boolean;
}

/** The phases the run went through, in order, from its journal's `phase` events. */
export function phaseTimeline(events: readonly RunEvent[], finished: boolean): PhaseEntry[] {
  const phases = events.filter((event): event is Extract<RunEvent, { kind: 'phase' }> => event.kind === 'phase');
  const outcome = events.find((event) => event.kind === 'outcome');
  return phases.map((event, index) => {
    const following = phases[index + 1]?.at ?? (finished ? outcome?.at : undefined);
    // The outcome can be recorded just before the last phase (`done`): no negative span.
    const next = following !== undefined && Date.parse(following) >= Date.parse(event.at) ? following : undefined;
    return { phase: event.phase, at: event.at, ...(next ? { endedAt: next } : {}), current: index === phases.length - 1 && !finished };
  });
}

interface StepNode {
  name: string;
  /** What kind of step (`capsule`, `gate`, `review`, `session`, `fix`, `queue`) and its subject (suite, panel, session id). */
  kind: string;
  subject?: string;
  status: StepRecord['status'];
  detail?: string;
  startedAt: string;
  endedAt?: string;
  markers: Marker[];
}

/** Sessions seen in the journal, by session id: what happened to each. */
function sessionEvents(events: readonly RunEvent[]): Map<string, Extract<RunEvent, { kind: 'session' }>[]> {
  const sessions = new Map<string, Extract<RunEvent, { kind: 'session' }>[]>();
  for (const event of events) {
    if (event.kind !== 'session') continue;
    const list = sessions.get(event.sessionId) ?? [];
    list.push(event);
    sessions.set(event.sessionId, list);
  }
  return sessions;
}

const gateKey = (suiteId: string, round: number) => `${suiteId}#${round}`;

/** Red gate results a later green one retired: `suite#round`. */
function supersededGates(outcome: Pick<LandingOutcome, 'supersedes'> | undefined): Set<string> {
  return new Set((outcome?.supersedes ?? []).map((entry) => gateKey(entry.suiteId, entry.red.round)));
}

/**
 * The step graph: each step of the landing in the order it ran, with what marks it — a gate
 * suite reattached to its container, reused from the gate cache or superseded by a later green round, a review panel
 * answered from the cache, a session respawned, reattached or escalated, a skipped step.
 */
export function stepGraph(view: Pick<LandingView, 'steps' | 'gates' | 'reviews' | 'outcome'>, events: readonly RunEvent[]): StepNode[] {
  const superseded = supersededGates(view.outcome);
  const sessions = sessionEvents(events);
  const gates = new Map(view.gates.map((gate) => [gateKey(gate.suiteId, gate.round ?? 1), gate]));
  return view.steps.map((step) => {
    const [kindPart = step.name, subjectPart] = splitOnce(step.name, ':');
    const kind = kindPart.split('.')[0] ?? kindPart;
    const markers: Marker[] = [];
    if (step.status === 'skipped') markers.push('skipped');
    if (step.status === 'failed') markers.push('failed');
    if (step.status === 'running') markers.push('running');
    let subject = subjectPart;
    if (kindPart === 'gate.runSuite' && subjectPart) {
      const [suite = subjectPart, roundPart = '1'] = splitOnce(subjectPart, '#');
      // An evidence run of a red (`test#1.same-tree`, `test#1.base`) is named for what it ran on.
      const [round = roundPart, on] = splitOnce(roundPart, '.');
      subject = `${suite} (round ${round}${on === 'same-tree' ? ', again on the same tree' : on === 'base' ? ', on the base' : ''})`;
      const gate = gates.get(gateKey(suite, Number(round)));
      if (gate?.reattached) markers.push('reattached');
      if (gate?.cache === 'hit') markers.push('cached');
      if (superseded.has(gateKey(suite, Number(round)))) markers.push('superseded');
    }
    if (kindPart === 'review.panel' && subjectPart) {
      const [, index = '1'] = splitOnce(subjectPart, '#');
      const review = view.reviews[Number(index) - 1];
      if (review?.cache === 'hit') markers.push('cached');
      else if (review?.cache === 'partial') markers.push('partly-cached');
    }
    if (kindPart.startsWith('session.') && subjectPart) markers.push(...sessionMarkers(sessions.get(subjectPart) ?? []));
    return {
      name: step.name,
      kind,
      ...(subject ? { subject } : {}),
      status: step.status,
      ...(step.detail ? { detail: step.detail } : {}),
      startedAt: step.startedAt,
      ...(step.endedAt ? { endedAt: step.endedAt } : {}),
      markers: unique(markers),
    };
  });
}

function sessionMarkers(events: readonly Extract<RunEvent, { kind: 'session' }>[]): Marker[] {
  const markers: Marker[] = [];
  if (events.some((event) => event.type === 'respawned')) markers.push('respawned');
  if (events.some((event) => event.type === 'reattached')) markers.push('reattached');
  if (events.some((event) => event.type === 'escalated')) markers.push('escalated');
  return markers;
}

interface GateRound {
  round: number;
  treeSha: string;
  results: (GateSuiteResult & { markers: Marker[] })[];
}

/** Gate results by round, each marked reattached or superseded (the red a later green retired). */
export function gateRounds(gates: readonly GateSuiteResult[], outcome: Pick<LandingOutcome, 'supersedes'> | undefined): GateRound[] {
  const superseded = supersededGates(outcome);
  const rounds = new Map<number, GateRound>();
  for (const gate of gates) {
    const round = gate.round ?? 1;
    const entry = rounds.get(round) ?? { round, treeSha: gate.treeSha, results: [] };
    const markers: Marker[] = [];
    if (gate.reattached) markers.push('reattached');
    if (gate.cache === 'hit') markers.push('cached');
    if (superseded.has(gateKey(gate.suiteId, round))) markers.push('superseded');
    if (gate.settled) markers.push(gate.settled === 'failed' ? 'failed-again' : gate.settled);
    if (gate.excused?.by === 'quarantine') markers.push('quarantined');
    entry.results.push({ ...gate, markers });
    rounds.set(round, entry);
  }
  return [...rounds.values()].sort((a, b) => a.round - b.round);
}

/** What superseded a red gate result: the round and tree of the green that retired it. */
export function supersededBy(
  outcome: Pick<LandingOutcome, 'supersedes'> | undefined,
  suiteId: string,
  round: number,
): { round: number; treeSha: string } | undefined {
  return outcome?.supersedes?.find((entry) => entry.suiteId === suiteId && entry.red.round === round)?.supersededBy;
}

export interface SessionRow {
  sessionId: string;
  role?: string;
  harnessModel?: string;
  status?: string;
  /** The class of its last classified attempt (`delivered`, `crashed`, `oom`…). */
  attemptClass?: string;
  attempts: number;
  respawns: number;
  escalations: number;
  /** The ladder rung it ended on: 1 + its escalations. */
  rung: number;
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
  markers: Marker[];
}

/**
 * The run's agent sessions: from the journal (what happened to each), the outcome (how each
 * ended) and, when fetched, each session's own status (its meters: tokens, respawns, escalations).
 */
export function sessionRows(
  events: readonly RunEvent[],
  outcome: Pick<LandingOutcome, 'sessions'> | undefined,
  details: ReadonlyMap<string, SessionStatusView | undefined>,
): SessionRow[] {
  const journal = sessionEvents(events);
  const ids = unique([...journal.keys(), ...(outcome?.sessions ?? []).map((entry) => entry.sessionId)]);
  return ids.map((sessionId) => {
    const seen = journal.get(sessionId) ?? [];
    const ended = outcome?.sessions?.find((entry) => entry.sessionId === sessionId);
    const detail = details.get(sessionId);
    const classified = seen.filter((event) => event.class !== undefined).at(-1);
    const escalations = detail?.meters.escalations ?? seen.filter((event) => event.type === 'escalated').length;
    const respawns = detail?.meters.respawns ?? seen.filter((event) => event.type === 'respawned').length;
    const attempts = detail?.outcome?.attempts.length ?? ended?.attempts ?? Math.max(0, ...seen.map((event) => event.attempt ?? 0));
    const status =
      detail?.outcome?.status ?? ended?.status ?? (seen.some((event) => event.type === 'ended' || event.type === 'delivered') ? 'ended' : 'running');
    const markers = sessionMarkers(seen);
    if (respawns > 0 && !markers.includes('respawned')) markers.push('respawned');
    if (escalations > 0 && !markers.includes('escalated')) markers.push('escalated');
    if (status === 'asked') markers.push('asked');
    const role = ended?.role ?? seen.find((event) => event.role)?.role;
    const harnessModel =
      detail?.outcome?.harnessModel ?? ended?.harnessModel ?? seen.filter((event) => event.harnessModel).at(-1)?.harnessModel ?? detail?.harnessModel;
    const attemptClass = detail?.outcome?.attempts.at(-1)?.class ?? classified?.class;
    return {
      sessionId,
      ...(role ? { role } : {}),
      ...(harnessModel ? { harnessModel } : {}),
      status,
      ...(attemptClass ? { attemptClass } : {}),
      attempts,
      respawns,
      escalations,
      rung: 1 + escalations,
      ...(detail ? { inputTokens: detail.meters.inputTokens, outputTokens: detail.meters.outputTokens, costUsd: detail.meters.costUsd } : {}),
      markers,
    };
  });
}

interface MeterRow {
  name: string;
  used: number;
  /** The budget's limit for it, when the run has a budget. */
  limit?: number;
  unit: string;
}

/** The landing's meters against its budget: tokens, cost, sessions and wall time. */
export function metersAgainstBudget(meters: Partial<Meters>, budget: LandingView['budget']): MeterRow[] {
  return [
    { name: 'tokens', used: (meters.inputTokens ?? 0) + (meters.outputTokens ?? 0), ...(budget ? { limit: budget.tokens } : {}), unit: 'tokens' },
    { name: 'cost', used: meters.costUsd ?? 0, ...(budget ? { limit: budget.costUsd } : {}), unit: 'USD' },
    { name: 'agent sessions', used: meters.agentSessions ?? 0, ...(budget ? { limit: budget.sessions } : {}), unit: 'sessions' },
    { name: 'wall time', used: meters.wallTimeMs ?? 0, ...(budget ? { limit: budget.wallMs } : {}), unit: 'ms' },
  ];
}

/** `0.4 s`, `12 s`, `3 min 05 s`, `1 h 02 min`: a duration as a reader says it. */
export function humanDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  const secondsIn = Math.floor(ms / 1000);
  if (secondsIn < 60) return `${secondsIn} s`;
  const minutes = Math.floor(secondsIn / 60);
  if (minutes < 60) return `${minutes} min ${String(secondsIn % 60).padStart(2, '0')} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/**
 * A landing's merge-queue lineage: the speculative batch it merged in (with the landings of that
 * fast-forward), and the batches that named it their culprit.
 */
interface BatchLineage {
  batch?: { id: string; round: number; treeSha: string; stackedSha: string; members: { id: string; self: boolean }[] };
  culprits: { batchId: string; round: number; treeSha: string; failing: string[] }[];
}

/** From the landing's outcome (`batch`, `culpritIn`); undefined when it went through the queue alone. */
export function batchLineage(outcome: Pick<LandingOutcome, 'batch' | 'culpritIn'> | undefined, landingId: string): BatchLineage | undefined {
  const batch = outcome?.batch;
  const culprits = outcome?.culpritIn ?? [];
  if (!batch && culprits.length === 0) return undefined;
  return {
    ...(batch
      ? {
          batch: {
            id: batch.id,
            round: batch.round,
            treeSha: batch.treeSha,
            stackedSha: batch.stackedSha,
            members: batch.members.map((id) => ({ id, self: id === landingId })),
          },
        }
      : {}),
    culprits: culprits.map((entry) => ({ ...entry, failing: [...entry.failing] })),
  };
}

/** A merge batch's members as its page lists them: what the batch decided for each, in the order it names them. */
export function batchMembers(
  outcome: Pick<BatchOutcome, 'results'>,
): { landingId: string; result: 'landed' | 'culprit' | 'retry'; round?: number; detail: string }[] {
  return Object.entries(outcome.results).map(([landingId, result]) => {
    if (result.kind === 'landed')
      return { landingId, result: result.kind, round: result.round, detail: `landed in round ${result.round} (tree ${result.treeSha.slice(0, 10)})` };
    if (result.kind === 'culprit')
      return {
        landingId,
        result: result.kind,
        round: result.round,
        detail: `the culprit: round ${result.round} red (${result.failing.join(', ')}); a fixup round, then back in the queue`,
      };
    return { landingId, result: result.kind, detail: `goes on alone: ${result.reason}` };
  });
}

interface QueuePanel {
  /** Who holds the target: a landing merging itself, or a speculative batch with its members. */
  holder?: { kind: 'landing'; id: string } | { kind: 'batch'; id: string; members: string[] };
  /** How long the turn in flight has run. */
  inFlight?: string;
  line: { landingId: string; position: number; lane: string; batchable: boolean; eta: string }[];
  /** The median of the recent turns (what the ETAs count in), or why there is no ETA. */
  turns: string;
}

/** What the queue panel shows of one queue: the holder, the line by position with lanes and ETAs, the recent turns. */
export function queuePanel(view: QueueView): QueuePanel {
  const sorted = [...view.recentTurnMs].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median = sorted.length === 0 ? undefined : sorted.length % 2 === 1 ? sorted[middle]! : Math.round((sorted[middle - 1]! + sorted[middle]!) / 2);
  return {
    ...(view.batch
      ? { holder: { kind: 'batch' as const, id: view.batch.id, members: [...view.batch.members] } }
      : view.current
        ? { holder: { kind: 'landing' as const, id: view.current } }
        : {}),
    ...(view.turnInFlightMs !== undefined ? { inFlight: humanDuration(view.turnInFlightMs) } : {}),
    line: [...view.waiting]
      .sort((a, b) => a.position - b.position)
      .map((entry) => ({
        landingId: entry.landingId,
        position: entry.position,
        lane: entry.lane > 0 ? `+${entry.lane}` : String(entry.lane),
        batchable: entry.batchable,
        eta: entry.etaMs === undefined ? 'not known yet' : `about ${humanDuration(entry.etaMs)}`,
      })),
    turns: median === undefined ? 'No turn timed yet: no ETA.' : `A turn takes ${humanDuration(median)} (median of the last ${sorted.length}).`,
  };
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const index = text.indexOf(separator);
  return index === -1 ? [text, undefined] : [text.slice(0, index), text.slice(index + separator.length)];
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
