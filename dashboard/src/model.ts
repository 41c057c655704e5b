/**
 * What the run page shows, derived from what the API returns: the status view (GET
 * /v1/landings/:id), the outcome, the journal events of the stream, and each session's own
 * status (GET /v1/runs/<run>.<session>). Pure: no DOM, no fetch (test/unit/dashboard-model.test.ts).
 */
import type { RunEvent } from '../../core/events';
import type { SessionStatusView } from '../../core/session-types';
import type { GateSuiteResult, LandingOutcome, LandingStatusView, Meters, ReviewRecord, StepRecord } from '../../core/types';

/** GET /v1/landings/:id as JSON (the status view, with the outcome once there is one). */
export type LandingView = Pick<LandingStatusView, 'phase' | 'steps' | 'gates' | 'pendingQuestions' | 'budget' | 'pausedFor'> & {
  id: string;
  workflowStatus: string;
  meters: Partial<Meters>;
  reviews: ReviewRecord[];
  statusUnavailable?: string;
  outcome?: LandingOutcome;
};

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
  | 'quarantined';

export interface PhaseEntry {
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

export interface StepNode {
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
export function sessionEvents(events: readonly RunEvent[]): Map<string, Extract<RunEvent, { kind: 'session' }>[]> {
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
export function supersededGates(outcome: Pick<LandingOutcome, 'supersedes'> | undefined): Set<string> {
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

export interface GateRound {
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
export function supersededBy(outcome: Pick<LandingOutcome, 'supersedes'> | undefined, suiteId: string, round: number): { round: number; treeSha: string } | undefined {
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
    const status = detail?.outcome?.status ?? ended?.status ?? (seen.some((event) => event.type === 'ended' || event.type === 'delivered') ? 'ended' : 'running');
    const markers = sessionMarkers(seen);
    if (respawns > 0 && !markers.includes('respawned')) markers.push('respawned');
    if (escalations > 0 && !markers.includes('escalated')) markers.push('escalated');
    if (status === 'asked') markers.push('asked');
    const role = ended?.role ?? seen.find((event) => event.role)?.role;
    const harnessModel = detail?.outcome?.harnessModel ?? ended?.harnessModel ?? seen.filter((event) => event.harnessModel).at(-1)?.harnessModel ?? detail?.harnessModel;
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

export interface MeterRow {
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

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const index = text.indexOf(separator);
  return index === -1 ? [text, undefined] : [text.slice(0, index), text.slice(index + separator.length)];
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
