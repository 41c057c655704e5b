/**
 * Pure rendering of what `tarmac watch` and `tarmac status` show. Two forms:
 * `eventLine` — one line per thing a reader of a log wants (phase change, step end,
 * gate result, session event, question, outcome), for pipes, files and CI; and
 * `screenLines` — the live display a terminal redraws in place.
 */
import type { BatchOutcome } from '../core/batch-types';
import type { FixOutcome } from '../core/fix-types';
import type { PanelVerdict } from '../core/review-types';
import type { Meters } from '../core/types';
import type { LandingView, QueueView, RunSummary, ScheduleSummary, ScheduleView } from './client';
import type { OutcomeLike, WatchEvent, WatchState } from './watch-state';

const marks = { started: '▸', running: '▸', done: '✓', passed: '✓', failed: '✗', skipped: '–', 'timed-out': '⧗' } as const;
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
      return `${at} gate ${mark(event.status)} ${event.suiteId} round ${event.round} ${event.status} (exit ${event.exitCode ?? 'none'}, ${formatDuration(event.durationMs)}${event.cache === 'hit' ? ', GATE_CACHE=hit' : ''}) on tree ${short(event.treeSha)} · log ${event.logRef}`;
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
        ? `${at} budget spent (${event.reason}): paused — extend with: tarmac budget ${state.runId} extend --tokens <n>, or stop with: tarmac budget ${state.runId} stop`
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
  // The merge queue's lineage: the speculative batch it merged in, the batches that named it their culprit.
  if (outcome.batch)
    lines.push(
      `batch: merged in ${outcome.batch.id}, gate round ${outcome.batch.round} on tree ${short(outcome.batch.treeSha)} (its commit ${short(outcome.batch.stackedSha)}); merged together: ${outcome.batch.members.join(', ')}`,
    );
  for (const culprit of outcome.culpritIn ?? [])
    lines.push(
      `culprit in batch ${culprit.batchId}: round ${culprit.round} on tree ${short(culprit.treeSha)} red (${culprit.failing.join(', ') || 'no suite named'}); a fixup round, then back in the queue at its place`,
    );
  const failed = (outcome.gates ?? []).filter((gate) => gate.status !== 'passed');
  if (outcome.status !== 'landed')
    for (const gate of failed)
      lines.push(`  ${mark(gate.status)} gate ${gate.suiteId} round ${gate.round ?? 1} ${gate.status} (exit ${gate.exitCode ?? 'none'}) · log ${gate.logRef}`);
  lines.push(`meters: ${metersLine(meters ?? outcome.meters)}`);
  return lines;
}

interface ScreenOptions {
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
  const lines = [
    `${finished ? ' ' : spinner[Math.floor(options.now / 100) % spinner.length]} ${state.runId}  phase ${state.phase ?? '…'}${state.outcome ? `  → ${state.outcome.status}` : ''}`,
  ];
  if (options.note) lines.push(`  ${options.note}`);
  const maxSteps = options.maxSteps ?? 12;
  if (state.steps.length > maxSteps) lines.push(`    … ${state.steps.length - maxSteps} earlier steps`);
  for (const step of state.steps.slice(-maxSteps)) {
    const took = step.endedAt ? between(step.startedAt, step.endedAt) : step.startedAt ? options.now - Date.parse(step.startedAt) : undefined;
    lines.push(`  ${mark(step.status)} ${step.name.padEnd(32)} ${took === undefined ? '' : formatDuration(took)}${step.detail ? `  ${step.detail}` : ''}`);
  }
  for (const gate of state.gates)
    lines.push(
      `  gate ${mark(gate.status)} ${gate.suiteId} round ${gate.round}${gate.evidence === 'base' ? ' on the base' : gate.evidence === 'same-tree' ? ' again' : ''} ${gate.status} (exit ${gate.exitCode ?? 'none'}${gate.cache === 'hit' ? ', GATE_CACHE=hit' : ''}) tree ${short(gate.treeSha)}`,
    );
  for (const cache of state.cache) lines.push(`  review cache ${cache.cache} (tree ${short(cache.treeSha)})`);
  for (const session of state.sessions) {
    lines.push(
      `  session ${session.sessionId} ${[session.role, session.harnessModel, session.attempt !== undefined ? `attempt ${session.attempt}` : undefined].filter(Boolean).join(' ')}: ${session.last}`,
    );
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
  const escapes = /\x1b\[[0-9;?]*[ -/]*[@-~]/g;
  // eslint-disable-next-line no-control-regex
  const controls = /[\x00-\x1f\x7f]/g;
  return line.replace(escapes, '').replace(/\t/g, '  ').replace(controls, '');
}

/** `tarmac status`: the landing's phase, steps, gates, questions, reviews, meters and outcome. */
export function statusLines(view: LandingView): string[] {
  const lines = [`${view.id}  ${view.workflowStatus}  phase ${view.phase}`];
  if (view.steps.length) lines.push('steps:');
  for (const step of view.steps) {
    const took = step.endedAt ? between(step.startedAt, step.endedAt) : undefined;
    lines.push(
      `  ${mark(step.status)} ${step.name.padEnd(32)} ${took === undefined ? '' : formatDuration(took)}${step.detail ? `  ${step.detail}` : ''}`.trimEnd(),
    );
  }
  if (view.gates.length) lines.push('gates:');
  for (const gate of view.gates) {
    lines.push(
      `  ${mark(gate.status)} ${gate.suiteId} round ${gate.round ?? 1} ${gate.status} (exit ${gate.exitCode ?? 'none'}, ${formatDuration(gate.durationMs)}${gate.cache === 'hit' ? ', GATE_CACHE=hit' : ''}) on tree ${short(gate.treeSha)} · log ${gate.logRef}`,
    );
    // A red settled by evidence: what it was, why it does not block (when it does not), each run's log.
    if (gate.settled)
      lines.push(
        `      settled ${gate.settled}${gate.excused ? `, does not block (${gate.excused.by}${gate.excused.until ? ` until ${gate.excused.until}` : ''})` : ''}`,
      );
    else if (gate.excused) lines.push(`      does not block (${gate.excused.by}${gate.excused.until ? ` until ${gate.excused.until}` : ''})`);
    for (const run of gate.evidence ?? [])
      lines.push(
        `      ${run.on === 'base' ? `on the base ${short(run.commitSha)}` : 'again'}: ${run.status} (exit ${run.exitCode ?? 'none'}) · log ${run.logRef}`,
      );
  }
  for (const question of view.pendingQuestions)
    lines.push(`question ${question.id}${asker(question)}: ${question.question}`, `  answer with: tarmac answer ${view.id} "<text>"`);
  for (const review of view.reviews) {
    lines.push(`review: ${review.status} (REVIEW_CACHE=${review.cache}) — ${review.summary}`);
  }
  if (view.outcome) lines.push(...outcomeLines(view.outcome, view.meters));
  else lines.push(`meters: ${metersLine(view.meters)}`);
  return lines;
}

/** Fix-loop outcomes that leave the branch in a good state (or answered the question). */
export const goodFixOutcomes: readonly string[] = ['fixed', 'nothing-to-fix', 'answered'];

export function isFixOutcome(value: unknown): value is FixOutcome {
  const record = value as Partial<FixOutcome> | null;
  return typeof record === 'object' && record !== null && typeof record.outcome === 'string' && typeof record.summary === 'string';
}

/** What a finished fix loop comes to; with the repo and branch, how to land its fixes. */
export function fixOutcomeLines(outcome: FixOutcome, landOnto?: { repo: string; branch: string }): string[] {
  const lines = [`outcome: ${outcome.outcome} — ${outcome.summary}`];
  if (outcome.fixBranch)
    lines.push(`fix branch: ${outcome.fixBranch}${landOnto ? `  (land it: tarmac land ${landOnto.repo} ${outcome.fixBranch} --onto ${landOnto.branch})` : ''}`);
  if (outcome.filesChanged?.length) lines.push(`files changed: ${outcome.filesChanged.join(', ')}`);
  if (outcome.reproCommand) {
    lines.push(
      `repro: ${outcome.reproCommand} → exit ${outcome.reproExitCode ?? 'none'}; repairs ${outcome.repairAttempts}${outcome.playbookUsed ? `; playbook ${outcome.playbookUsed}` : ''}`,
    );
  }
  // Why this repro (or why none), and what was read to decide.
  if (outcome.reproReason)
    lines.push(
      `repro chosen${outcome.reproSource ? ` (from the ${outcome.reproSource === 'explicit' ? "request's --repro" : outcome.reproSource === 'request' ? "request's words" : 'repository'})` : ''}: ${outcome.reproReason}`,
    );
  if (outcome.groundingFiles?.length) lines.push(`grounding files read: ${outcome.groundingFiles.join(', ')}`);
  if (outcome.meters) lines.push(`meters: ${metersLine(outcome.meters)}`);
  return lines;
}

export function isPanelVerdict(value: unknown): value is PanelVerdict {
  const record = value as Partial<PanelVerdict> | null;
  return (
    typeof record === 'object' && record !== null && typeof record.status === 'string' && typeof record.summary === 'string' && Array.isArray(record.reviewers)
  );
}

/** A review panel's verdict: the decision, the cache, each reviewer, the blocking findings, the spend. */
export function verdictLines(verdict: PanelVerdict): string[] {
  const lines = [`verdict: ${verdict.status} — ${verdict.summary}`];
  lines.push(
    `panel ${verdict.panel} on tree ${short(verdict.treeSha)}: REVIEW_CACHE=${verdict.cache}${verdict.restored.length ? ` (restored: ${verdict.restored.join(', ')})` : ''}; ${verdict.delivered} verdict(s), quorum ${verdict.quorum}`,
  );
  for (const reviewer of verdict.reviewers) {
    const mark = reviewer.status === 'delivered' ? marks.done : marks.failed;
    const how =
      reviewer.source === 'cache'
        ? 'from the cache'
        : `session ${reviewer.sessionStatus ?? '?'}${reviewer.attempts !== undefined ? `, ${reviewer.attempts} attempt(s)` : ''}${reviewer.respawns ? `, ${reviewer.respawns} respawn(s)` : ''}`;
    lines.push(`  ${mark} ${reviewer.harnessModel} ${reviewer.status} (${how})${reviewer.reason ? `: ${reviewer.reason}` : ''}`);
  }
  if (verdict.needsDecision) lines.push(`needs a decision: ${verdict.needsDecision}`);
  lines.push(`findings: ${verdict.findings.length}, blocking ${verdict.blocking.length}`);
  for (const finding of verdict.blocking)
    lines.push(`  ${marks.failed} ${finding.file}${finding.line !== undefined ? `:${finding.line}` : ''} ${finding.message} (${finding.votes.join(', ')})`);
  const meters = verdict.meters;
  lines.push(
    `meters: tokens ${formatCount(meters.inputTokens)} in / ${formatCount(meters.outputTokens)} out · cost $${meters.costUsd.toFixed(4)} · sessions ${verdict.sessionsStarted} · containers ${meters.sessionsSpawned} (respawns ${meters.respawns})`,
  );
  return lines;
}

/** Rows of text in columns, each as wide as its widest cell; the last column is not padded. */
export function columns(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, index) => Math.max(...rows.map((row) => (row[index] ?? '').length))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** `2026-12-01T19:00:03Z`: an API time to the second. */
export const second = (iso: string | undefined) => (iso ? iso.replace(/\.\d+Z$/, 'Z') : '');

/** `tarmac list`: one run a row. */
export function runListLines(runs: RunSummary[]): string[] {
  if (runs.length === 0) return ['no runs match'];
  return columns([
    ['ID', 'KIND', 'STATUS', 'PHASE', 'OUTCOME', 'TARGET', 'STARTED'],
    ...runs.map((run) => [run.id, run.kind, run.workflowStatus, run.phase ?? '-', run.outcome ?? '-', run.target ?? '-', second(run.startTime)]),
  ]);
}

/** `tarmac schedule list`: one schedule a row. */
export function scheduleListLines(schedules: ScheduleSummary[]): string[] {
  if (schedules.length === 0) return ['no schedules'];
  return columns([
    ['ID', 'TARGET', 'CRON', 'TIMEZONE', 'STATE', 'NEXT RUN'],
    ...schedules.map((schedule) => [
      schedule.id,
      schedule.target,
      schedule.cron,
      schedule.timezone,
      schedule.paused ? 'paused' : 'active',
      second(schedule.nextRuns[0]) || '-',
    ]),
  ]);
}

/** `tarmac schedule show`: the definition, the next runs, what runs now and what ran. */
export function scheduleLines(view: ScheduleView): string[] {
  const lines = [
    `${view.id}  ${view.paused ? 'paused' : 'active'}${view.note ? ` (${view.note})` : ''}`,
    `repo: ${view.repo}`,
    `target: ${view.target}`,
    `cron: ${view.cron} (${view.timezone})${view.agents?.implementer ? ` · implementer ${view.agents.implementer}` : ''}`,
    `next runs: ${view.nextRuns.map(second).join(', ') || 'none'}`,
    `runs taken: ${view.actionsTaken}${view.running.length ? ` · running: ${view.running.join(', ')}` : ''}`,
  ];
  if (view.recentRuns.length) lines.push('recent runs:');
  for (const run of view.recentRuns) {
    const outcome =
      run.outcome && typeof run.outcome.status === 'string'
        ? `${run.outcome.status}${typeof run.outcome.summary === 'string' ? ` — ${run.outcome.summary}` : ''}`
        : '';
    lines.push(`  ${run.workflowId}  ${run.workflowStatus}  ${second(run.takenAt)}${outcome ? `  ${outcome}` : ''}`);
  }
  return lines;
}

/** `~25 s`: a waiting landing's ETA (until its turn is over); `-` before the queue has timed a turn. */
export function formatEta(ms: number | undefined): string {
  return ms === undefined ? '-' : `~${formatDuration(ms)}`;
}

const lane = (value: number) => (value > 0 ? `+${value}` : String(value));

/** The middle of the queue's recent turn durations (what its ETAs count in). */
function medianMs(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : Math.round((sorted[middle - 1]! + sorted[middle]!) / 2);
}

/** `tarmac queue <repo> <target>`: who holds the target, the batch in flight, the waiting line by lane with ETAs. */
export function queueLines(view: QueueView): string[] {
  if (!view.running) return [`no queue runs for ${view.target} of ${view.repo}: nothing holds the target and nobody waits`];
  const lines = [`queue ${view.queueId}: ${view.target} of ${view.repo}`];
  const turn = view.turnInFlightMs === undefined ? '' : ` (for ${formatDuration(view.turnInFlightMs)})`;
  if (view.batch) lines.push(`batch in flight: ${view.batch.id}${turn}`, `  members: ${view.batch.members.join(', ')}`);
  if (view.current) lines.push(`holds the target: ${view.current}${view.batch ? '' : turn}`);
  if (!view.batch && !view.current) lines.push('the target is free');
  if (view.waiting.length === 0) lines.push('nobody waits');
  else {
    lines.push(`waiting: ${view.waiting.length}`);
    const rows = view.waiting.map((entry) => [
      String(entry.position),
      entry.landingId,
      lane(entry.lane),
      entry.batchable ? 'yes' : 'no',
      formatEta(entry.etaMs),
    ]);
    lines.push(...columns([['POS', 'LANDING', 'LANE', 'BATCHABLE', 'ETA'], ...rows]).map((line) => `  ${line}`));
  }
  const median = medianMs(view.recentTurnMs);
  lines.push(
    `admitted ${view.admitted} · batches ${view.batches} · ${median === undefined ? 'no turn timed yet (no ETA)' : `a turn takes ${formatDuration(median)} (median of the last ${view.recentTurnMs.length})`}`,
  );
  return lines;
}

/** `tarmac queue`: the target queues that run, one a row. */
export function queueListLines(queues: readonly QueueView[]): string[] {
  if (queues.length === 0) return ['no target queue runs'];
  return columns([
    ['TARGET', 'HOLDER', 'WAITING', 'NEXT ETA', 'ADMITTED', 'BATCHES', 'REPO'],
    ...queues.map((queue) => [
      queue.target,
      queue.batch ? `batch ${queue.batch.id}` : (queue.current ?? '-'),
      String(queue.waiting.length),
      queue.waiting.length ? formatEta(queue.waiting[0]!.etaMs) : '-',
      String(queue.admitted),
      String(queue.batches),
      queue.repo,
    ]),
  ]);
}

export function isBatchOutcome(value: unknown): value is BatchOutcome {
  const record = value as Partial<BatchOutcome> | null;
  return (
    typeof record === 'object' && record !== null && typeof record.batchId === 'string' && Array.isArray(record.rounds) && typeof record.results === 'object'
  );
}

/** `tarmac status <batch id>`: what a speculative batch did — each member's result, each gate round, each fast-forward. */
export function batchOutcomeLines(outcome: BatchOutcome): string[] {
  const lines = [`outcome: ${outcome.summary}`, 'members:'];
  for (const [landingId, result] of Object.entries(outcome.results)) {
    if (result.kind === 'landed') lines.push(`  ${marks.done} ${landingId} landed (round ${result.round}, tree ${short(result.treeSha)})`);
    else if (result.kind === 'culprit')
      lines.push(
        `  ${marks.failed} ${landingId} culprit (round ${result.round}, tree ${short(result.treeSha)}: ${result.failing.join(', ')} red): its fixup round, then back in the queue`,
      );
    else lines.push(`  · ${landingId} goes on alone: ${result.reason}`);
  }
  for (const round of outcome.rounds) {
    const red = round.gates.filter((gate) => gate.status !== 'passed').map((gate) => `${gate.suiteId} ${gate.status}`);
    lines.push(
      `round ${round.round}: the first ${round.prefix} stacked on tree ${short(round.treeSha)} ${round.green ? `${marks.passed} green` : `${marks.failed} red (${red.join(', ')})`}`,
    );
  }
  for (const merge of outcome.merges)
    lines.push(`merged: ${outcome.target} ${short(merge.from)} → ${short(merge.to)} (round ${merge.round}: ${merge.members.join(', ')})`);
  return lines;
}
