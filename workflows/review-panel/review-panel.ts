import {
  CancellationScope,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, SealedReport } from '../../activities';
import { hostQueue, placementQueue } from '../../core/queues';
import type { CacheStatus, PanelMeters, PanelRequest, PanelReviewer, PanelVerdict, ResolvedPanel, ReviewerReport } from '../../core/review-types';
import type { ConversationRef, SessionOutcome, SessionRequest } from '../../core/session-types';
import { parseDuration } from '../../core/duration';
import { capsule } from '../activity-options';
import { eventsQuery, panelStatusQuery, runEventSignal } from '../../core/messages';
import { metrics } from '../metrics';
import { budgetShare } from '../../policies/budget';
import { askAgent, QuestionDesk, undecided } from '../questions';
import { RunJournal } from '../run-journal';
import { causeOf } from '../run-record';
import { childRecord } from '../../core/search-attributes';
import { workflowTaskTimeout } from '../../core/timeouts';
import { decidePanel, reviewerReportOf, type PanelDecision } from '../../policies/quorum';

const slug = (text: string) => text.replace(/[^A-Za-z0-9._-]+/g, '_');

/**
 * reviewPanel: restore the findings cache (hit / partial / miss) → dispatch only the
 * missing reviewers as parallel agentSession children → seal each report the moment
 * it arrives (before any quorum check) → quorum → verdict with merged findings.
 * A reviewer that errs is respawned by its own session (the session policy); one that still has no
 * verdict makes the panel review-incomplete whatever the quorum — never "no findings".
 */
export async function reviewPanel(input: PanelRequest, own?: { journal: RunJournal; desk: QuestionDesk }): Promise<PanelVerdict> {
  const { workflowId, taskQueue } = workflowInfo();
  const { journal, desk } = own ?? ownJournal(input);
  const reportTo = input.reportTo ?? workflowId;
  const shared = proxyActivities<Activities>({ ...capsule, taskQueue });
  const request = input;
  if (input.fresh) return await standalone(input, input.fresh, { journal, desk });
  const hostId = request.hostId!;
  const treeSha = request.treeSha!;
  const headSha = request.headSha!;
  const files = request.files ?? [];
  const host = proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(hostId) });
  const status: PanelStatus = { state: 'restoring', restored: [], running: [], sealed: [] };
  setHandler(panelStatusQuery, () => ({ ...status, restored: [...status.restored], running: [...status.running], sealed: [...status.sealed] }));

  const panel = await shared['review.resolvePanel']({
    name: request.panel,
    ...(request.quorum ? { quorum: request.quorum } : {}),
    ...(request.recipes ? { recipes: request.recipes } : {}),
  });
  const { restored, misses } = await host['review.restore']({ treeSha: treeSha, promptVersion: panel.promptVersion, reviewers: panel.reviewers });
  const cache: CacheStatus = misses.length === 0 ? 'hit' : restored.length === 0 ? 'miss' : 'partial';
  status.cache = cache;
  status.restored = restored.map((entry) => entry.harnessModel);
  log.info('REVIEW_CACHE', { cache, restored: status.restored, misses });
  metrics.reviewCache(cache);
  await announceCache(request, journal, { treeSha, cache, restored: status.restored });

  const reports = new Map<string, ReviewerReport>();
  const reviewers: PanelReviewer[] = [];
  const spent: SessionOutcome['meters'][] = [];
  for (const entry of restored) {
    reports.set(entry.harnessModel, { harnessModel: entry.harnessModel, status: 'delivered', findings: entry.report.findings });
    reviewers.push({ harnessModel: entry.harnessModel, source: 'cache', status: 'delivered' });
  }

  status.state = 'reviewing';
  status.running = misses.map((miss) => miss.harnessModel);
  const reviewerBudget = shareOf(request.budget, misses.length);
  const waitMs = request.recipes?.limits.questions?.wait ? parseDuration(request.recipes.limits.questions.wait) : undefined;
  const session = {
    request,
    panel,
    host,
    treeSha,
    headSha,
    files,
    reportTo,
    desk,
    ...(waitMs ? { waitMs } : {}),
    ...(reviewerBudget ? { budget: reviewerBudget } : {}),
  };
  await Promise.all(misses.map(async ({ harnessModel }) => tally({ status, reports, reviewers, spent }, harnessModel, await review(session, harnessModel))));

  const verdict = panelVerdict(panel, reports, reviewers, { treeSha, cache, restored: status.restored, misses, meters: panelMeters(spent) });
  // A reviewer's question answered empty (or not in time): the run's decision, not the panel's verdict.
  const undecidedReviewer = [...reports.values()].find((report) => report.undecided);
  if (undecidedReviewer?.undecided) verdict.needsDecision = undecidedReviewer.undecided;
  status.state = 'done';
  status.verdict = verdict;
  journal.record({ kind: 'outcome', status: verdict.status, summary: verdict.summary });
  journal.finished = true;
  return verdict;
}

/** What the panel's `status` query shows. */
interface PanelStatus {
  state: string;
  cache?: CacheStatus;
  restored: string[];
  running: string[];
  sealed: string[];
  verdict?: PanelVerdict;
}

/**
 * A panel on its own keeps its own live events (GET /v1/runs/:id/events: cache, sessions,
 * verdict) and its reviewers' questions; inside a landing it uses the landing's.
 */
function ownJournal(input: PanelRequest): { journal: RunJournal; desk: QuestionDesk } {
  const journal = new RunJournal();
  const desk = new QuestionDesk(journal, input.reportTo);
  setHandler(eventsQuery, ({ after, limit } = {}) => journal.page(after, limit));
  setHandler(runEventSignal, ({ key, ...event }) => (event.kind === 'question' ? desk.adopt(event, key) : journal.record(event, key)));
  desk.install();
  return { journal, desk };
}

/** A reviewer's session ended: its report joins the panel's, its spend the meters. */
function tally(
  panel: { status: PanelStatus; reports: Map<string, ReviewerReport>; reviewers: PanelReviewer[]; spent: SessionOutcome['meters'][] },
  harnessModel: string,
  { report, outcome }: { report: ReviewerReport; outcome?: SessionOutcome },
): void {
  const { status } = panel;
  status.running = status.running.filter((name) => name !== harnessModel);
  if (report.status === 'delivered') status.sealed.push(harnessModel);
  panel.reports.set(harnessModel, report);
  if (outcome) panel.spent.push(outcome.meters);
  panel.reviewers.push({
    harnessModel,
    source: 'session',
    status: report.status,
    ...(outcome ? { sessionStatus: outcome.status, attempts: outcome.attempts.length, respawns: outcome.meters.respawns } : {}),
    ...(report.reason ? { reason: report.reason } : {}),
  });
}

/** The verdict: the quorum over every reviewer's report (cached or fresh), in the panel's order. */
function panelVerdict(
  panel: { name: string; reviewers: string[]; quorum: number; blockingSeverities: Parameters<typeof decidePanel>[2] },
  reports: Map<string, ReviewerReport>,
  reviewers: PanelReviewer[],
  { treeSha, cache, restored, misses, meters }: Pick<PanelVerdict, 'treeSha' | 'cache' | 'restored' | 'misses' | 'meters'>,
): PanelVerdict {
  const decision = decidePanel(
    panel.reviewers.map((name) => reports.get(name)!),
    panel.quorum,
    panel.blockingSeverities,
  );
  return {
    status: decision.status,
    summary: `${panelSummary(decision, reports)} [REVIEW_CACHE=${cache}]`,
    treeSha,
    panel: panel.name,
    cache,
    restored,
    misses,
    reviewers: panel.reviewers.map((name) => reviewers.find((entry) => entry.harnessModel === name)!),
    quorum: panel.quorum,
    delivered: decision.delivered,
    missing: decision.missing,
    errored: decision.errored,
    unavailable: decision.unavailable,
    findings: decision.findings,
    blocking: decision.blocking,
    sessionsStarted: misses.length,
    meters,
  };
}

/** What the reviewer sessions spent, summed (a restored reviewer spent nothing in this run). */
function panelMeters(sessions: SessionOutcome['meters'][]): PanelMeters {
  const total: PanelMeters = { sessionsSpawned: 0, respawns: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 };
  for (const meters of sessions) {
    total.sessionsSpawned += meters.sessionsSpawned;
    total.respawns += meters.respawns;
    total.inputTokens += meters.inputTokens;
    total.outputTokens += meters.outputTokens;
    total.costUsd += meters.costUsd;
  }
  return total;
}

/** Standalone (POST /v1/reviews): a workspace of its own at the head, the facts of base...head, then the panel; cleaned up after. */
async function standalone(
  input: PanelRequest,
  fresh: NonNullable<PanelRequest['fresh']>,
  own: { journal: RunJournal; desk: QuestionDesk },
): Promise<PanelVerdict> {
  // Through the placement queue: the worker that prepares the workspace is a host, and the panel's from here on.
  const placing = proxyActivities<Activities>({ ...capsule, taskQueue: placementQueue(workflowInfo().taskQueue) });
  const { hostId } = await placing['capsule.prepareSessionWorkspace']({ runId: input.runId, repo: input.repo, ref: fresh.head, alsoFetch: [fresh.base] });
  const pinned = proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(hostId) });
  const facts = await pinned['capsule.diffFacts']({ runId: input.runId, base: fresh.baseSha });
  const { fresh: _fresh, ...rest } = input;
  try {
    return await reviewPanel({ ...rest, hostId, ...facts }, own);
  } finally {
    own.journal.finished = true;
    await CancellationScope.nonCancellable(() => pinned['capsule.cleanupRun']({ runId: input.runId }).catch(() => undefined));
  }
}

/** The cache status goes to the run the panel works for (a landing's journal), or to the panel's own. */
async function announceCache(request: PanelRequest, journal: RunJournal, event: { treeSha: string; cache: CacheStatus; restored: string[] }): Promise<void> {
  if (!request.reportTo) {
    journal.record({ kind: 'cache', ...event });
    return;
  }
  await getExternalWorkflowHandle(request.reportTo)
    .signal(runEventSignal, { kind: 'cache', ...event, key: `${workflowInfo().workflowId}:cache` })
    .catch(() => undefined);
}

/** Reviewers run side by side: each gets an equal share of the panel's budget (when it was given one in full). */
function shareOf(given: PanelRequest['budget'], reviewers: number): SessionRequest['budget'] | undefined {
  if (!given || given.tokens === undefined || given.costUsd === undefined || given.sessions === undefined || given.wall === undefined) return given;
  return {
    ...budgetShare({ tokens: given.tokens, costUsd: given.costUsd, sessions: given.sessions, wall: given.wall }, reviewers),
    onExhausted: given.onExhausted ?? 'stop',
  };
}

interface ReviewSession {
  request: PanelRequest;
  panel: ResolvedPanel;
  host: Activities;
  treeSha: string;
  headSha: string;
  files: string[];
  reportTo: string;
  /** Where its reviewers' questions are asked, and how long one may wait. */
  desk: QuestionDesk;
  waitMs?: number;
  budget?: SessionRequest['budget'];
}

/**
 * One missing reviewer: an agent session on the tree (read-only), its report sealed in the cache the
 * moment it arrives — a survivor of a partial panel is never lost, whatever happens next. The session
 * respawns a failed attempt per the session policy (limits.session: maxRespawns, maxAttempts); the
 * panel starts no session of its own on top, so a reviewer gets exactly the attempts the policy
 * allows. One that still did not deliver is errored (with why), never "no findings", and never sealed.
 */
async function review(at: ReviewSession, harnessModel: string): Promise<{ report: ReviewerReport; outcome?: SessionOutcome }> {
  const { panel, treeSha } = at;
  let outcome: SessionOutcome;
  try {
    outcome = await reviewerSession(at, harnessModel);
    // Questions first: a reviewer that asks is answered, and a follow-up in its conversation reviews.
    for (let followUps = 1; outcome.status === 'asked'; followUps += 1) {
      const answers = await askAgent(at.desk, outcome, `reviewing tree ${treeSha.slice(0, 12)} for panel ${panel.name}`, at.waitMs);
      if (!('followUp' in answers)) {
        const { summary } = undecided(answers);
        return { report: { harnessModel, status: 'errored', findings: [], reason: summary, undecided: summary }, outcome };
      }
      outcome = await reviewerSession(at, harnessModel, { ...answers.followUp, n: followUps });
    }
  } catch (error) {
    if (isCancellation(error)) throw error;
    // The session workflow itself failed (terminated, …): no outcome, no verdict.
    const { message } = causeOf(error);
    return { report: { harnessModel, status: 'errored', findings: [], reason: `its session workflow failed: ${message}` } };
  }
  const report = reviewerReportOf(harnessModel, outcome);
  const result = outcome.result;
  if (report.status !== 'delivered' || !result) return { report, outcome };
  const sealed: SealedReport = { summary: result.summary, findings: result.findings ?? [], usage: result.usage };
  await at.host['review.seal']({ key: { treeSha, harnessModel, promptVersion: panel.promptVersion }, report: sealed });
  return { report, outcome };
}

/** The reviewer's agent session: a child workflow on the landing's workspace, read-only. */
async function reviewerSession(
  at: ReviewSession,
  harnessModel: string,
  followUp?: { continues?: ConversationRef; message: string; n: number },
): Promise<SessionOutcome> {
  const { workflowId, taskQueue } = workflowInfo();
  const { request, panel, treeSha } = at;
  const answered = followUp ? `-answered-${followUp.n}` : '';
  return (await executeChild('agentSession', {
    workflowId: `${workflowId}.${slug(harnessModel)}${answered}`,
    taskQueue,
    workflowTaskTimeout,
    ...childRecord('agent-session', { repo: request.repo, parent: workflowId, summary: { role: 'reviewer', harnessModel, treeSha } }),
    args: [
      {
        runId: request.runId,
        sessionId: `review-${treeSha.slice(0, 12)}-${slug(harnessModel)}${answered}`,
        role: 'reviewer',
        harnessModel,
        ladder: [harnessModel],
        task: { prompt: followUp ? `${followUp.message}\n\n${panel.prompt}` : panel.prompt, files: at.files },
        ...(followUp?.continues ? { continues: followUp.continues } : {}),
        workspace: { kind: 'run', repo: request.repo, hostId: request.hostId!, baseSha: at.headSha },
        reportTo: at.reportTo,
        ...(at.budget ? { budget: at.budget } : {}),
        ...(request.recipes ? { recipes: request.recipes } : {}),
      } satisfies SessionRequest,
    ],
  })) as SessionOutcome;
}

/**
 * The verdict's one line. Incomplete: every reviewer without a verdict, named with why (an errored
 * one makes it incomplete whatever the quorum); otherwise who decided, and who could not run.
 */
function panelSummary(decision: PanelDecision, reports: Map<string, ReviewerReport>): string {
  const why = (name: string) => `${name} (${reports.get(name)?.reason ?? 'no report'})`;
  const notRun = decision.unavailable.length ? `; not run: ${decision.unavailable.map(why).join('; ')}` : '';
  if (decision.status === 'review-incomplete') {
    const rule = decision.errored.length
      ? `an errored reviewer never yields a verdict, whatever the quorum (${decision.delivered} delivered, quorum ${decision.quorum})`
      : `${decision.delivered} of ${decision.quorum} required report(s)`;
    return `review-incomplete: ${rule}; missing ${decision.missing.map(why).join('; ')}`;
  }
  if (decision.status === 'changes-requested') {
    return `changes requested: ${decision.blocking.length} blocking finding(s) (${decision.blocking.map((finding) => `${finding.file}:${finding.line ?? 0} ${finding.message}`).join('; ')})${notRun}`;
  }
  return `approved by ${decision.delivered} reviewer(s); ${decision.findings.length} non-blocking finding(s)${notRun}`;
}
