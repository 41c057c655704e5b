import { executeChild, getExternalWorkflowHandle, isCancellation, workflowInfo } from '@temporalio/workflow';
import type { Activities, SealedReport } from '../../activities';
import type { CacheStatus, PanelRequest, ResolvedPanel, ReviewerReport } from '../../core/review-types';
import type { ConversationRef, SessionOutcome, SessionRequest } from '../../core/session-types';
import { runEventSignal } from '../../core/messages';
import { budgetShare } from '../../policies/budget';
import { askAgent, undecided, type QuestionDesk } from '../questions';
import type { RunJournal } from '../run-journal';
import { causeOf } from '../run-record';
import { childRecord } from '../../core/search-attributes';
import { workflowTaskTimeout } from '../../core/timeouts';
import { reviewerReportOf } from '../../policies/quorum';

/* The panel's reviewers: the cache's announcement, each missing reviewer's share of the budget, its agent session. */

const slug = (text: string) => text.replace(/[^A-Za-z0-9._-]+/g, '_');

/** The cache status goes to the run the panel works for (a landing's journal), or to the panel's own. */
export async function announceCache(
  request: PanelRequest,
  journal: RunJournal,
  event: { treeSha: string; cache: CacheStatus; restored: string[] },
): Promise<void> {
  if (!request.reportTo) {
    journal.record({ kind: 'cache', ...event });
    return;
  }
  await getExternalWorkflowHandle(request.reportTo)
    .signal(runEventSignal, { kind: 'cache', ...event, key: `${workflowInfo().workflowId}:cache` })
    .catch(() => undefined);
}

/** Reviewers run side by side: each gets an equal share of the panel's budget (when it was given one in full). */
export function shareOf(given: PanelRequest['budget'], reviewers: number): SessionRequest['budget'] | undefined {
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
export async function review(at: ReviewSession, harnessModel: string): Promise<{ report: ReviewerReport; outcome?: SessionOutcome }> {
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
