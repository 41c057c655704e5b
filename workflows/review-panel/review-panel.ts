import { CancellationScope, log, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { hostQueue, placementQueue } from '../../core/queues';
import type { CacheStatus, PanelRequest, PanelReviewer, PanelVerdict, ReviewerReport } from '../../core/review-types';
import type { SessionOutcome } from '../../core/session-types';
import { parseDuration } from '../../core/duration';
import { capsule } from '../activity-options';
import { panelStatusQuery } from '../../core/messages';
import { metrics } from '../metrics';
import type { QuestionDesk } from '../questions';
import type { RunJournal } from '../run-journal';
import { ownJournal, panelMeters, panelVerdict, tally, type PanelStatus } from './record';
import { announceCache, review, shareOf } from './reviewers';

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
