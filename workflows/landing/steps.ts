import { condition, executeChild, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { failure, FailureCode } from '../../core/failures';
import type { FixOutcome, FixRequest } from '../../core/fix-types';
import { defaultRunnerImage, defaultSuiteTimeout, gateFilePath, suiteTimeoutMs, type GateFile, type GateFileParse } from '../../core/gate-file';
import { hostQueue } from '../../core/queues';
import type { PanelRequest, PanelVerdict } from '../../core/review-types';
import type { ConversationRef, SessionOutcome, SessionRequest } from '../../core/session-types';
import type { LandingOutcome, Question } from '../../core/types';
import { gateSuite } from '../activity-options';
import { metrics } from '../metrics';
import type { EnvironmentRef } from '../../core/environment-types';
import type { EnvironmentParse } from '../../core/environment-source';
import { settledText, settleRed, type SettleWith } from './flake';
import { budgetExhausted, budgetLeft, extendBudget } from '../../policies/budget';
import { changedSubject, classifyApproval, gateFileDecision, gateFileQuestion, gateFileRefusal, type GateFileFacts } from '../../policies/gate-file-change';
import { landingRepairRequest } from '../../policies/intent';
import { repairPlan } from '../../policies/repair-plan';
import { skippedRungs } from '../../policies/skipped-rungs';
import { gateVerdict } from '../../policies/supersedes';
import { childRecord } from '../../core/search-attributes';
import { workflowTaskTimeout } from '../../core/timeouts';
import { askAgent, undecided } from '../questions';
import type { LandingStepContext } from './step-context';

/**
 * The landing's compound steps: child sessions, panels and fix loops, gate rounds and
 * questions, each recorded in the tracker (step list, meters, journal). The phases keep
 * the control flow; these keep the bookkeeping of one step each. Plain functions of the
 * landing's context: what they share is in it, not in closures.
 */
/**
 * Before a child that may start agent sessions: what is left of the landing's budget, to
 * hand to it. Spent → `stop` ends the landing (budget-exhausted); `pause` waits for an
 * operator to extend or stop it (`POST /v1/runs/<id>/budget`). No budget → the child's own.
 */
async function budgetForChild(ctx: LandingStepContext): Promise<SessionRequest['budget'] | undefined> {
  const { tracker, budgetControl } = ctx;
  for (;;) {
    const limits = tracker.budget;
    if (!limits) return undefined;
    const { meters } = tracker;
    const spentSoFar = {
      inputTokens: meters.inputTokens,
      outputTokens: meters.outputTokens,
      costUsd: meters.costUsd,
      sessionsSpawned: meters.agentSessions,
      wallTimeMs: Date.now() - ctx.startedAt,
    };
    const spent = budgetExhausted(spentSoFar, limits);
    if (!spent) return { ...budgetLeft(spentSoFar, limits), onExhausted: 'stop' };
    if (limits.onExhausted === 'stop') throw failure(FailureCode.budgetExhausted, `the landing's budget is spent (${spent})`);
    tracker.pausedFor = spent;
    tracker.journal.record({ kind: 'budget', state: 'paused', reason: spent });
    await condition(() => budgetControl.pending !== undefined);
    const command = budgetControl.pending!;
    budgetControl.pending = undefined;
    tracker.pausedFor = undefined;
    tracker.journal.record({
      kind: 'budget',
      state: command.action === 'stop' ? 'stopped' : 'extended',
      reason: command.action === 'stop' ? 'stopped by an operator' : 'extended by an operator',
    });
    if (command.action === 'stop') throw failure(FailureCode.budgetExhausted, `stopped by an operator while paused for its budget (${spent})`);
    tracker.budget = extendBudget(limits, command);
  }
}

/** Runs an agent session as a child workflow on this run's workspace (its commands in `environment`, when there is one). */
export async function session(
  ctx: LandingStepContext,
  role: 'resolver' | 'fixer',
  sessionId: string,
  baseSha: string,
  hostId: string,
  task: SessionRequest['task'],
  continues?: ConversationRef,
  environment?: EnvironmentRef,
): Promise<SessionOutcome> {
  const { runId, taskQueue, request, tracker } = ctx;
  const harnessModel = (role === 'resolver' ? request.agents?.resolver : request.agents?.fixer) ?? '';
  const budget = await budgetForChild(ctx);
  const result = await tracker.step(
    `session.${role}:${sessionId}`,
    'session',
    () =>
      executeChild('agentSession', {
        workflowId: `${runId}.${sessionId}`,
        taskQueue,
        workflowTaskTimeout,
        ...childRecord('agent-session', {
          repo: request.repo,
          target: request.target,
          parent: runId,
          summary: { role, harnessModel: harnessModel || '(ladder)' },
        }),
        args: [
          {
            runId,
            sessionId,
            role,
            harnessModel,
            task,
            workspace: { kind: 'run', repo: request.repo, hostId, baseSha },
            reportTo: runId,
            ...(budget ? { budget } : {}),
            ...(request.agents?.ladder ? { ladder: request.agents.ladder } : {}),
            ...(continues ? { continues } : {}),
            ...(request.recipes ? { recipes: request.recipes } : {}),
            ...(environment ? { environment } : {}),
          } satisfies SessionRequest,
        ],
      }) as Promise<SessionOutcome>,
    (value) => (value.status === 'agent-unavailable' ? value.summary : `${value.status} after ${value.attempts.length} attempt(s) on ${value.harnessModel}`),
    (value) => (value.status === 'agent-unavailable' ? 'agent-unavailable' : 'done'),
  );
  // A rung the session passed over (no image, no key) shows as its own step, before the session's.
  const skipped = skippedRungs(`session.${role}:${sessionId}`, result);
  if (skipped.length > 0) {
    const at = tracker.steps.map((step) => step.name).lastIndexOf(`session.${role}:${sessionId}`);
    const { startedAt } = tracker.steps[at]!;
    tracker.steps.splice(at, 0, ...skipped.map(({ name, detail }) => ({ name, status: 'agent-unavailable' as const, startedAt, endedAt: startedAt, detail })));
  }
  tracker.sessions.push({ sessionId, role, status: result.status, harnessModel: result.harnessModel, attempts: result.attempts.length });
  tracker.meters.agentSessions += result.meters.sessionsSpawned;
  tracker.meters.inputTokens += result.meters.inputTokens;
  tracker.meters.outputTokens += result.meters.outputTokens;
  tracker.meters.costUsd += result.meters.costUsd;
  return result;
}

/**
 * Asks a blocking question and waits for the `answer` update — or, when the recipe sets a wait
 * limit (`ctx.questionWaitMs`), until it passes. The answer (trimmed), or the landing's outcome when
 * no decision to go on came: no answer in time → needs-decision, the wait named.
 */
async function ask(ctx: LandingStepContext, question: Omit<Question, 'answer' | 'owner'>): Promise<{ answer: string } | { stopped: LandingOutcome }> {
  const { tracker } = ctx;
  const answered = await tracker.desk.ask(question, ctx.questionWaitMs);
  if ('answer' in answered) return answered;
  const waited = `no answer to question ${question.id} within ${Math.round(answered.waitedMs / 1000)} s (the recipe's limits.questions.wait)`;
  return { stopped: tracker.fail(FailureCode.needsDecision, `${waited}; nothing was merged`, { message: `${waited}: ${question.question}` }) };
}

/**
 * Questions first: an agent's questions, asked one by one before any more agent time is spent.
 * The follow-up that hands the answers to the session that asked (reuse first: it continues that
 * conversation), or the outcome when an answer is empty (a decision not to go on) or none came in time.
 */
export async function answerAgent(
  ctx: LandingStepContext,
  asked: SessionOutcome,
  why: string,
): Promise<{ followUp: { continues?: ConversationRef; message: string } } | { stopped: LandingOutcome }> {
  const answers = await askAgent(ctx.tracker.desk, asked, why, ctx.questionWaitMs);
  if ('followUp' in answers) return answers;
  const { summary, message } = undecided(answers);
  return { stopped: ctx.tracker.fail(FailureCode.needsDecision, `${summary}; nothing was merged`, { message }) };
}

/**
 * Before a head's gate counts: does `headSha` change the gate file or the environment's
 * declaration files relative to `targetSha` (edit, add, delete, rename away or onto it)? The
 * version an operator approved passes; any other change is asked about, and only an answer from
 * the fixed vocabulary approves it — for that exact version. `known`: the facts, when the step that made
 * the head read them on the same SHAs. Returns the outcome when it stops.
 */
export async function checkGateFile(
  ctx: LandingStepContext,
  host: Activities,
  targetSha: string,
  headSha: string,
  when: string,
  known?: GateFileFacts,
): Promise<LandingOutcome | undefined> {
  const { runId, tracker } = ctx;
  const facts = known ?? (await host['capsule.gateFileFacts']({ runId, targetSha, headSha }));
  const decision = gateFileDecision(facts, ctx.gateFiles.approved);
  if (decision.kind !== 'ask') return undefined;
  if (tracker.phase !== 'questions') tracker.enter('questions');
  ctx.gateFiles.asked += 1;
  // The first id is the one earlier versions used; later questions get their own.
  const id = ctx.gateFiles.asked === 1 ? 'gate-file-edit' : `gate-file-edit-${ctx.gateFiles.asked}`;
  const asked = await ask(ctx, {
    id,
    question: gateFileQuestion(decision.change, headSha, when, decision.files),
    from: 'the landing',
    why: `${when}, the head changes ${changedSubject(decision.files)}`,
  });
  if ('stopped' in asked) return asked.stopped;
  const { answer } = asked;
  if (classifyApproval(answer) === 'approved') {
    ctx.gateFiles.approved = { blob: decision.blob };
    return undefined;
  }
  const refusal = gateFileRefusal(answer, decision.files);
  return tracker.fail(FailureCode.needsDecision, refusal.summary, { message: refusal.message, file: refusal.file });
}

/** The outcome for a target whose gate file is missing or invalid (`context`: when it was read, appended). */
export function invalidGateFile(ctx: LandingStepContext, parse: Extract<GateFileParse, { ok: false }>, context = ''): LandingOutcome {
  const { tracker } = ctx;
  const { field, message } = parse;
  const where = field === '(file)' ? gateFilePath : `${gateFilePath}: ${field}`;
  return tracker.fail(FailureCode.invalidGateFile, `${where} ${message}${context}`, { message: `${where} ${message}`, file: gateFilePath, field });
}

/** The outcome for a target whose environment declaration is invalid: the file, the field and why; nothing was built. */
export function invalidEnvironment(ctx: LandingStepContext, parse: Extract<EnvironmentParse, { ok: false }>): LandingOutcome {
  const { file, field, message } = parse;
  const where = field === '(root)' || field === '(file)' ? file : `${file}: ${field}`;
  return ctx.tracker.fail(FailureCode.invalidEnvironment, `${where} ${message}; nothing was built or merged`, { message: `${where} ${message}`, file, field });
}

/**
 * Runs every suite on one tree; results join the gate record with their round. With `settle`, red
 * suites are then settled by evidence (flake.ts): a re-run on the same tree and a run on the base.
 */
export async function runGate(
  ctx: LandingStepContext,
  pinned: string,
  gate: GateFile,
  round: number,
  commitSha: string,
  treeSha: string,
  settle?: SettleWith,
  environment?: EnvironmentRef,
) {
  const { runId, request, tracker } = ctx;
  for (const suite of gate.suites) {
    const timeoutMs = suiteTimeoutMs(suite);
    const runner = proxyActivities<Activities>({
      ...gateSuite(timeoutMs),
      taskQueue: hostQueue(pinned),
      ...(ctx.hostLostAfterMs ? { scheduleToStartTimeout: ctx.hostLostAfterMs } : {}),
    });
    const result = await tracker.step(
      `gate.runSuite:${suite.id}#${round}`,
      'container',
      async () => {
        const value = await runner['gate.runSuite']({
          runId,
          repo: request.repo,
          commitSha,
          treeSha,
          suite,
          image: gate.image ?? defaultRunnerImage,
          timeoutMs,
          round,
          ...(environment ? { environment } : {}),
        });
        // A result reused from the gate cache ran no container: not one of the meters' containers.
        if (value.cache === 'hit') tracker.meters.containersRun -= 1;
        return value;
      },
      (value) =>
        `${value.status} (exit ${value.exitCode ?? 'none'})${value.reattached ? ', reattached' : ''}${value.cache ? `; GATE_CACHE=${value.cache}` : ''}`,
    );
    tracker.addGate({ ...result, round });
    if (result.cache) metrics.gateCache(result.cache);
  }
  if (settle) await settleRed(ctx, pinned, gate, round, commitSha, treeSha, settle);
  return gateVerdict(
    tracker.gates.map((record) => ({ ...record, round: record.round ?? 1 })),
    gate.suites.map((suite) => suite.id),
    treeSha,
  );
}

/** Runs the review panel on the workspace head's tree (a child workflow; the cache makes repeats free). */
export async function reviewTree(
  ctx: LandingStepContext,
  host: Activities,
  pinnedHost: string,
  review: NonNullable<GateFile['review']>,
): Promise<PanelVerdict> {
  const { runId, taskQueue, request, tracker } = ctx;
  const budget = await budgetForChild(ctx);
  tracker.enter('review');
  const facts = await tracker.step('capsule.changedFiles', 'capsule', () => host['capsule.changedFiles']({ runId, targetSha: tracker.facts.targetSha! }));
  const current = { headSha: tracker.facts.headSha!, treeSha: tracker.facts.treeSha! };
  const verdict = await tracker.step(
    `review.panel:${review.panel}#${tracker.reviews.length + 1}`,
    'session',
    () =>
      executeChild('reviewPanel', {
        workflowId: `${runId}.review-${tracker.reviews.length + 1}`,
        taskQueue,
        workflowTaskTimeout,
        ...childRecord('review-panel', {
          repo: request.repo,
          target: request.target,
          parent: runId,
          summary: { panel: review.panel, treeSha: current.treeSha },
        }),
        args: [
          {
            runId,
            repo: request.repo,
            hostId: pinnedHost,
            headSha: current.headSha,
            treeSha: current.treeSha,
            files: facts,
            panel: review.panel,
            quorum: review.quorum,
            reportTo: runId,
            ...(budget ? { budget } : {}),
            ...(request.recipes ? { recipes: request.recipes } : {}),
          } satisfies PanelRequest,
        ],
      }) as Promise<PanelVerdict>,
    (value) => `${value.status}; REVIEW_CACHE=${value.cache}${value.restored.length ? ` (restored: ${value.restored.join(', ')})` : ''}`,
  );
  recordReview(ctx, verdict);
  return verdict;
}

/** The review panel's verdict in the landing's record, and its spend in the landing's meters. */
function recordReview(ctx: LandingStepContext, verdict: PanelVerdict): void {
  const { runId, tracker } = ctx;
  // A verdict of a panel that ran before panels reported their meters counts its sessions only.
  const spent = verdict.meters ?? { sessionsSpawned: verdict.sessionsStarted, respawns: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 };
  tracker.desk.withdraw(`${runId}.review-${tracker.reviews.length + 1}`);
  tracker.reviews.push({
    treeSha: verdict.treeSha,
    status: verdict.status,
    summary: verdict.summary,
    cache: verdict.cache,
    restored: verdict.restored,
    sessionsStarted: verdict.sessionsStarted,
    missing: verdict.missing,
    blocking: verdict.blocking.map(({ file, line, severity, message, votes }) => ({ file, ...(line === undefined ? {} : { line }), severity, message, votes })),
    reviewers: verdict.reviewers,
    ...(verdict.skipped ? { skipped: verdict.skipped } : {}),
    meters: spent,
  });
  // The panel's spend is the landing's: its meters, so the budget check before the next child sees it.
  tracker.meters.agentSessions += spent.sessionsSpawned;
  tracker.meters.inputTokens += spent.inputTokens;
  tracker.meters.outputTokens += spent.outputTokens;
  tracker.meters.costUsd += spent.costUsd;
}

/** A fixup round for a red gate: a child fixLoop in this run's workspace, its repro the failing suites (in the gate's environment, when there is one). */
export async function fixRedGate(
  ctx: LandingStepContext,
  gate: GateFile,
  failing: string[],
  fixup: number,
  hostId: string,
  baseSha: string,
  environment?: EnvironmentRef,
): Promise<FixOutcome> {
  const { runId, taskQueue, request, tracker } = ctx;
  const plan = repairPlan(gate.suites, failing);
  const reproCommand = plan.kind === 'repair' ? plan.reproCommand : 'true';
  const suites = gate.suites.filter((suite) => failing.includes(suite.id));
  const reproTimeoutMs = Math.max(...suites.map(suiteTimeoutMs));
  const label = `fixup-${fixup}`;
  const agents = request.agents;
  const budget = await budgetForChild(ctx);
  const result = await tracker.step(
    `fix.loop:${label}`,
    'session',
    () =>
      executeChild('fixLoop', {
        workflowId: `${runId}.${label}`,
        taskQueue,
        workflowTaskTimeout,
        ...childRecord('fix-loop', { repo: request.repo, target: request.target, parent: runId, summary: { failing, reproCommand } }),
        args: [
          {
            runId,
            repo: request.repo,
            branch: request.heads[0]!.branch,
            request: landingRepairRequest,
            reproCommand,
            reproImage: gate.image ?? defaultRunnerImage,
            reproTimeoutMs,
            workspace: { hostId, baseSha },
            label,
            reportTo: runId,
            ...(budget ? { budget } : {}),
            ...(request.recipes ? { recipes: request.recipes } : {}),
            ...(environment ? { environment } : {}),
            agents: {
              ...(agents?.fixer ? { implementer: agents.fixer } : {}),
              ...(agents?.ladder ? { ladder: agents.ladder } : {}),
            },
          } satisfies FixRequest,
        ],
      }) as Promise<FixOutcome>,
    (value) => `${value.outcome}${value.playbookUsed ? ` (playbook ${value.playbookUsed})` : ''}: ${value.summary}`,
    (value) => (value.outcome === 'agent-unavailable' ? 'agent-unavailable' : 'done'),
  );
  recordFix(ctx, label, result);
  return result;
}

/** The fixup round's outcome in the landing's record: its loop, its sessions, its meters. */
function recordFix(ctx: LandingStepContext, label: string, result: FixOutcome): void {
  const { runId, tracker } = ctx;
  tracker.desk.withdraw(`${runId}.${label}`);
  tracker.fixLoops.push({
    id: `${runId}.${label}`,
    outcome: result.outcome,
    summary: result.summary,
    playbookUsed: result.playbookUsed,
    repairAttempts: result.repairAttempts,
    filesChanged: result.filesChanged,
  });
  for (const entry of result.sessions) {
    tracker.sessions.push({
      sessionId: entry.sessionId,
      role: result.routedTo,
      status: entry.status,
      harnessModel: entry.harnessModel,
      attempts: entry.attempts ?? 1,
    });
  }
  tracker.meters.agentSessions += result.meters.agentSessions;
  tracker.meters.containersRun += result.meters.containersRun;
  tracker.meters.inputTokens += result.meters.inputTokens;
  tracker.meters.outputTokens += result.meters.outputTokens;
  tracker.meters.costUsd += result.meters.costUsd;
}

export function redSummary(ctx: LandingStepContext, gate: GateFile, treeSha: string, round: number): { summary: string; message: string } {
  const { tracker } = ctx;
  // An excused red (flake.ts) blocks nothing: only the blocking ones are named, with what settled them.
  const red = tracker.gates.filter((record) => record.treeSha === treeSha && record.round === round && record.status !== 'passed' && !record.excused);
  const parts = red.map((record) => {
    const suite = gate.suites.find((entry) => entry.id === record.suiteId);
    const how = record.status === 'timed-out' ? `timed out after ${suite?.timeout ?? defaultSuiteTimeout}` : `exited ${record.exitCode}`;
    const settled = record.settled ? ` (${settledText(record.settled)})` : '';
    return { text: `gate suite ${record.suiteId} ${how}${settled}`, log: [record.logRef, ...(record.evidence ?? []).map((run) => run.logRef)].join(', ') };
  });
  return {
    summary: `${parts.map((part) => part.text).join('; ')} on tree ${treeSha.slice(0, 12)}; log: ${parts.map((part) => part.log).join(', ')}`,
    message: parts.map((part) => part.text.replace('gate suite ', 'suite ')).join('; '),
  };
}
