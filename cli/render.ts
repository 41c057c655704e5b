/**
 * Pure rendering of what `tarmac watch` and `tarmac status` show. Two forms:
 * `eventLine` — one line per thing a reader of a log wants (phase change, step end,
 * gate result, session event, question, outcome), for pipes, files and CI; and
 * `screenLines` — the live display a terminal redraws in place.
 */
import type { Meters } from '../core/types';
import type { LandingView } from './client';
import type { OutcomeLike, WatchEvent, WatchState } from './watch-state';

export const marks = { started: '▸', running: '▸', done: '✓', passed: '✓', failed: '✗', skipped: '–', 'timed-out': '⧗' } as const;
const mark = (status: string) => (marks as Record<string, string>)[status] ?? '·';


/** Who asked a question and why, as the CLI shows it: ` (from resolver-1 (…); the rebase … stopped …)`. */
function asker(question: { from?: string; why?: string }): string {
  const parts = [question.from ? `from ${question.from}` : undefined, question.why].filter(Boolean);
  return parts.length ? ` (${parts.join('; ')})` : '';
}
/** `0.4 s`, `12 s`, `3 m 05 s`, `1 h 02 m`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} m ${String(seconds % 60).padStart(2, '0')} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} m`;
}

/** `950`, `12.3k`, `4.1M`. */
export function formatCount(count: number): string {
  if (count < 1000) return String(count);
  if (count < 1_000_000) return `${(count / 1000).toFixed(count < 10_000 ? 1 : 0)}k`;
  return `${(count / 1_000_000).toFixed(1)}M`;
}

const short = (sha: string | undefined) => (sha ? sha.slice(0, 7) : '?');
const between = (from: string | undefined, to: string | undefined) => (from && to ? Date.parse(to) - Date.parse(from) : undefined);

/** The run's meters in one line; `wallMs` overrides the meter while the run is still going. */
export function metersLine(meters: Partial<Meters> | undefined, wallMs?: number): string {
  const m = meters ?? {};
  const wall = wallMs ?? m.wallTimeMs;
  return [
    `tokens ${formatCount(m.inputTokens ?? 0)} in / ${formatCount(m.outputTokens ?? 0)} out`,
    `cost $${(m.costUsd ?? 0).toFixed(4)}`,
    `containers ${m.containersRun ?? 0}`,
    `sessions ${m.agentSessions ?? 0}`,
    `capsules ${m.capsulesRun ?? 0}`,
    `wall ${wall === undefined ? '?' : formatDuration(wall)}`,
  ].join(' · ');
}

/** `+0:05`: time since the run's first event, as a prefix of plain lines. */
function stamp(state: WatchState, at: string | undefined): string {
  const ms = between(state.startedAt, at) ?? 0;
  const seconds = Math.max(0, Math.floor(ms / 1000));
  return `[+${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}]`;
}

export interface LineOptions {
  /** Also print runner log lines (default false: only the run's own events). */
  logs?: boolean;
}

/**
 * The plain line for one event, or `undefined` when the event is not worth a line
 * (a step start, a meters update, the end marker). `state` is the state after the event.
 */
export function eventLine(event: WatchEvent, state: WatchState, options: LineOptions = {}): string | undefined {
  const at = 'seq' in event ? stamp(state, event.at) : '';
  switch (event.kind) {
    case 'phase':
      return `${at} phase ${event.phase}`;
    case 'step':
      if (event.status === 'started') return undefined;
      return `${at} step ${mark(event.status)} ${event.name}${event.status === 'failed' ? ' failed' : ''}${event.detail ? `: ${event.detail}` : ''}`;
    case 'gate':
      return `${at} gate ${mark(event.status)} ${event.suiteId} round ${event.round} ${event.status} (exit ${event.exitCode ?? 'none'}, ${formatDuration(event.durationMs)}) on tree ${short(event.treeSha)} · log ${event.logRef}`;
    case 'session': {
      const about = [event.role, event.harnessModel, event.attempt !== undefined ? `attempt ${event.attempt}` : undefined].filter(Boolean).join(', ');
      const what = event.type === 'classified' && event.class ? `classified ${event.class}` : event.type;
      return `${at} session ${event.sessionId} ${what}${about ? ` (${about})` : ''}${event.detail ? `: ${event.detail}` : ''}`;
    }
    case 'cache':
      return `${at} review cache ${event.cache} for tree ${short(event.treeSha)}${event.restored.length ? ` (restored: ${event.restored.join(', ')})` : ''}`;
    case 'question':
      if (event.withdrawn) return `${at} question ${event.id} withdrawn: ${event.from ?? 'its asker'} ended without an answer`;
      return event.answer !== undefined
        ? `${at} answered ${event.id}: ${event.answer === '' ? '(empty: stop)' : event.answer}`
        : `${at} question ${event.id}${asker(event)}: ${event.question} — answer with: tarmac answer ${state.runId} "<text>"`;
    case 'budget':
      return event.state === 'paused'
        ? `${at} budget spent (${event.reason}): paused — extend with POST /v1/runs/${state.runId}/budget {"action":"extend",…} or stop with {"action":"stop"}`
        : `${at} budget ${event.state}: ${event.reason}`;
    case 'outcome':
      return `${at} outcome ${event.status}: ${event.summary}`;
    case 'trimmed':
      return `${at} journal trimmed: ${event.reason}`;
    case 'host':
      return `${at} host ${event.hostId} lost: ${event.reason}`;
    case 'log':
      return options.logs ? `log ${event.file}: ${event.line}` : undefined;
    case 'meters':
    case 'end':
      return undefined;
  }
}

/** What a finished run comes to: outcome, summary, merged SHA, meters. */
export function outcomeLines(outcome: OutcomeLike | undefined, meters?: Partial<Meters>, workflowStatus?: string): string[] {
  if (!outcome) return [`outcome: none recorded (workflow ${workflowStatus ?? 'status unknown'})`];
  const lines = [`outcome: ${outcome.status} — ${outcome.summary}`];
  if (outcome.mergedSha) lines.push(`merged: ${outcome.target ?? 'target'} is now ${outcome.mergedSha}`);
  const failed = (outcome.gates ?? []).filter((gate) => gate.status !== 'passed');
  if (outcome.status !== 'landed') for (const gate of failed) lines.push(`  ${mark(gate.status)} gate ${gate.suiteId} round ${gate.round ?? 1} ${gate.status} (exit ${gate.exitCode ?? 'none'}) · log ${gate.logRef}`);
  lines.push(`meters: ${metersLine(meters ?? outcome.meters)}`);
  return lines;
}

export interface ScreenOptions {
  /** Current time (ms since epoch): the wall clock of a running run. */
  now: number;
  /** Terminal width: longer lines are cut so a redraw never wraps. */
  columns: number;
  /** Most step rows shown (the latest ones). */
  maxSteps?: number;
  /** A note under the title (e.g. "reconnecting…"). */
  note?: string;
}

const spinner = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** The live display: title and phase, steps, gates, sessions, questions, meters, log tail. */
export function screenLines(state: WatchState, options: ScreenOptions): string[] {
  const finished = state.outcome !== undefined || state.end !== undefined;
  const live = state.startedAt ? options.now - Date.parse(state.startedAt) : undefined;
  const wall = finished ? undefined : live;
  const lines = [`${finished ? ' ' : spinner[Math.floor(options.now / 100) % spinner.length]} ${state.runId}  phase ${state.phase ?? '…'}${state.outcome ? `  → ${state.outcome.status}` : ''}`];
  if (options.note) lines.push(`  ${options.note}`);
  const maxSteps = options.maxSteps ?? 12;
  if (state.steps.length > maxSteps) lines.push(`    … ${state.steps.length - maxSteps} earlier steps`);
  for (const step of state.steps.slice(-maxSteps)) {
    const took = step.endedAt ? between(step.startedAt, step.endedAt) : step.startedAt ? options.now - Date.parse(step.startedAt) : undefined;
    lines.push(`  ${mark(step.status)} ${step.name.padEnd(32)} ${took === undefined ? '' : formatDuration(took)}${step.detail ? `  ${step.detail}` : ''}`);
  }
  for (const gate of state.gates) lines.push(`  gate ${mark(gate.status)} ${gate.suiteId} round ${gate.round} ${gate.status} (exit ${gate.exitCode ?? 'none'}) tree ${short(gate.treeSha)}`);
  for (const cache of state.cache) lines.push(`  review cache ${cache.cache} (tree ${short(cache.treeSha)})`);
  for (const session of state.sessions) {
    lines.push(`  session ${session.sessionId} ${[session.role, session.harnessModel, session.attempt !== undefined ? `attempt ${session.attempt}` : undefined].filter(Boolean).join(' ')}: ${session.last}`);
  }
  for (const question of state.questions.filter((item) => item.answer === undefined)) {
    lines.push(`  ? ${question.id}${asker(question)}: ${question.question}`, `    answer with: tarmac answer ${state.runId} "<text>"`);
  }
  lines.push(`  ${metersLine(state.meters, wall)}`);
  if (state.logs.length > 0) {
    lines.push(`  ── ${state.logs[state.logs.length - 1]!.file}`);
    for (const log of state.logs) lines.push(`  │ ${log.line}`);
  }
  const width = Math.max(20, options.columns - 1);
  return lines.map(printable).map((line) => (line.length > width ? `${line.slice(0, width - 1)}…` : line));
}

/** A runner's colours, cursor moves and tabs would break the redraw: they become plain text. */
export function printable(line: string): string {
  // eslint-disable-next-line no-control-regex
  return line.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, '').replace(/\t/g, '  ').replace(/[\x00-\x1f\x7f]/g, '');
}

/** `tarmac status`: the landing's phase, steps, gates, questions, reviews, meters and outcome. */
export function statusLines(view: LandingView): string[] {
  const lines = [`${view.id}  ${view.workflowStatus}  phase ${view.phase}`];
  if (view.steps.length) lines.push('steps:');
  for (const step of view.steps) {
    const took = step.endedAt ? between(step.startedAt, step.endedAt) : undefined;
    lines.push(`  ${mark(step.status)} ${step.name.padEnd(32)} ${took === undefined ? '' : formatDuration(took)}${step.detail ? `  ${step.detail}` : ''}`.trimEnd());
  }
  if (view.gates.length) lines.push('gates:');
  for (const gate of view.gates) {
    lines.push(`  ${mark(gate.status)} ${gate.suiteId} round ${gate.round ?? 1} ${gate.status} (exit ${gate.exitCode ?? 'none'}, ${formatDuration(gate.durationMs)}) on tree ${short(gate.treeSha)} · log ${gate.logRef}`);
  }
  for (const question of view.pendingQuestions) lines.push(`question ${question.id}${asker(question)}: ${question.question}`, `  answer with: tarmac answer ${view.id} "<text>"`);
  for (const review of view.reviews) {
    const field = (name: string) => (typeof review[name] === 'string' ? review[name] : '?');
    lines.push(`review: ${field('status')} (REVIEW_CACHE=${field('cache')})${typeof review.summary === 'string' ? ` — ${review.summary}` : ''}`);
  }
  if (view.outcome) lines.push(...outcomeLines(view.outcome, view.meters));
  else lines.push(`meters: ${metersLine(view.meters)}`);
  return lines;
}
