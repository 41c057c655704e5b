import { CancellationScope, executeChild, getExternalWorkflowHandle, log, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { SealedReport } from '../activities/review-cache';
import { hostQueue } from '../core/queues';
import type { CacheStatus, PanelRequest, PanelVerdict, ReviewerReport } from '../core/review-types';
import type { SessionOutcome, SessionRequest } from '../core/session-types';
import { capsule } from './activity-options';
import { eventsQuery, panelStatusQuery, runEventSignal } from '../core/messages';
import { metrics } from './metrics';
import { budgetShare } from '../policies/budget';
import { RunJournal } from './run-journal';
import { childRecord } from '../core/search-attributes';
import { decidePanel } from '../policies/quorum';

const slug = (text: string) => text.replace(/[^A-Za-z0-9._-]+/g, '_');

/**
 * reviewPanel: restore the findings cache (hit / partial / miss) → dispatch only the
 * missing reviewers as parallel agentSession children → seal each report the moment
 * it arrives (before any quorum check) → quorum → verdict with merged findings.
 * A reviewer that errs is missing, never "no findings".
 */
export async function reviewPanel(input: PanelRequest, ownJournal?: RunJournal): Promise<PanelVerdict> {
  const { workflowId, taskQueue } = workflowInfo();
  // Its own live events (GET /v1/runs/:id/events) when it runs on its own: cache, sessions, verdict.
  const journal = ownJournal ?? new RunJournal();
  if (!ownJournal) {
    setHandler(eventsQuery, ({ after, limit } = {}) => journal.page(after, limit));
    setHandler(runEventSignal, ({ key, ...event }) => journal.record(event, key));
  }
  const reportTo = input.reportTo ?? workflowId;
  const shared = proxyActivities<Activities>({ ...capsule, taskQueue });
  const request = input;
  if (input.fresh) {
    // Standalone: a workspace of our own at the head, then the facts of base...head.
    const { hostId } = await shared['capsule.prepareSessionWorkspace']({ runId: input.runId, repo: input.repo, ref: input.fresh.head, alsoFetch: [input.fresh.base] });
    const pinned = proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(hostId) });
    const facts = await pinned['capsule.diffFacts']({ runId: input.runId, base: input.fresh.baseSha });
    const { fresh: _fresh, ...rest } = input;
    try {
      return await reviewPanel({ ...rest, hostId, ...facts }, journal);
    } finally {
      journal.finished = true;
      await CancellationScope.nonCancellable(() => pinned['capsule.cleanupRun']({ runId: input.runId }).catch(() => undefined));
    }
  }
  const hostId = request.hostId!;
  const treeSha = request.treeSha!;
  const headSha = request.headSha!;
  const files = request.files ?? [];
  const host = proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(hostId) });
  const status = { state: 'restoring', restored: [] as string[], running: [] as string[], sealed: [] as string[] } as {
    state: string;
    cache?: CacheStatus;
    restored: string[];
    running: string[];
    sealed: string[];
    verdict?: PanelVerdict;
  };
  setHandler(panelStatusQuery, () => ({ ...status, restored: [...status.restored], running: [...status.running], sealed: [...status.sealed] }));

  const panel = await shared['review.resolvePanel']({ name: request.panel, ...(request.quorum ? { quorum: request.quorum } : {}) });
  const { restored, misses } = await host['review.restore']({ treeSha: treeSha, promptVersion: panel.promptVersion, reviewers: panel.reviewers });
  const cache: CacheStatus = misses.length === 0 ? 'hit' : restored.length === 0 ? 'miss' : 'partial';
  status.cache = cache;
  status.restored = restored.map((entry) => entry.harnessModel);
  log.info('REVIEW_CACHE', { cache, restored: status.restored, misses });
  metrics.reviewCache(cache);
  if (request.reportTo) {
    await getExternalWorkflowHandle(request.reportTo)
      .signal(runEventSignal, { kind: 'cache', treeSha, cache, restored: status.restored, key: `${workflowId}:cache` })
      .catch(() => undefined);
  } else {
    journal.record({ kind: 'cache', treeSha, cache, restored: status.restored });
  }

  const reports = new Map<string, ReviewerReport>();
  const reviewers: PanelVerdict['reviewers'] = [];
  for (const entry of restored) {
    reports.set(entry.harnessModel, { harnessModel: entry.harnessModel, status: 'delivered', findings: entry.report.findings });
    reviewers.push({ harnessModel: entry.harnessModel, source: 'cache', status: 'delivered' });
  }

  status.state = 'reviewing';
  status.running = misses.map((miss) => miss.harnessModel);
  // Reviewers run side by side: each gets an equal share of the panel's budget.
  const given = request.budget;
  const reviewerBudget: SessionRequest['budget'] | undefined =
    given && given.tokens !== undefined && given.costUsd !== undefined && given.sessions !== undefined && given.wall !== undefined
      ? { ...budgetShare({ tokens: given.tokens, costUsd: given.costUsd, sessions: given.sessions, wall: given.wall }, misses.length), onExhausted: given.onExhausted ?? 'stop' }
      : given;
  await Promise.all(
    misses.map(async ({ harnessModel }) => {
      const outcome = (await executeChild('agentSession', {
        workflowId: `${workflowId}.${slug(harnessModel)}`,
        taskQueue,
        ...childRecord('agent-session', { repo: request.repo, parent: workflowId, summary: { role: 'reviewer', harnessModel, treeSha } }),
        args: [
          {
            runId: request.runId,
            sessionId: `review-${treeSha.slice(0, 12)}-${slug(harnessModel)}`,
            role: 'reviewer',
            harnessModel,
            ladder: [harnessModel],
            task: { prompt: panel.prompt, files },
            workspace: { kind: 'run', repo: request.repo, hostId, baseSha: headSha },
            reportTo,
            ...(reviewerBudget ? { budget: reviewerBudget } : {}),
          } satisfies SessionRequest,
        ],
      })) as SessionOutcome;
      status.running = status.running.filter((name) => name !== harnessModel);
      const delivered = outcome.status === 'delivered' && outcome.result !== undefined;
      if (delivered) {
        const report: SealedReport = { summary: outcome.result!.summary, findings: outcome.result!.findings ?? [], usage: outcome.result!.usage };
        // Seal first: a survivor of a partial panel is never lost, whatever happens next.
        await host['review.seal']({ key: { treeSha: treeSha, harnessModel, promptVersion: panel.promptVersion }, report });
        status.sealed.push(harnessModel);
      }
      reports.set(harnessModel, { harnessModel, status: delivered ? 'delivered' : 'errored', findings: delivered ? (outcome.result!.findings ?? []) : [] });
      reviewers.push({ harnessModel, source: 'session', status: delivered ? 'delivered' : 'errored', sessionStatus: outcome.status });
    }),
  );

  const decision = decidePanel(
    panel.reviewers.map((name) => reports.get(name)!),
    panel.quorum,
    panel.blockingSeverities,
  );
  const summary =
    decision.status === 'review-incomplete'
      ? `review-incomplete: ${decision.delivered} of ${panel.quorum} required report(s); missing ${decision.missing.join(', ')}`
      : decision.status === 'changes-requested'
        ? `changes requested: ${decision.blocking.length} blocking finding(s) (${decision.blocking.map((finding) => `${finding.file}:${finding.line ?? 0} ${finding.message}`).join('; ')})`
        : `approved by ${decision.delivered} reviewer(s); ${decision.findings.length} non-blocking finding(s)`;
  const verdict: PanelVerdict = {
    status: decision.status,
    summary: `${summary} [REVIEW_CACHE=${cache}]`,
    treeSha: treeSha,
    panel: panel.name,
    cache,
    restored: status.restored,
    misses,
    reviewers: panel.reviewers.map((name) => reviewers.find((entry) => entry.harnessModel === name)!),
    quorum: panel.quorum,
    delivered: decision.delivered,
    missing: decision.missing,
    findings: decision.findings,
    blocking: decision.blocking,
    sessionsStarted: misses.length,
  };
  status.state = 'done';
  status.verdict = verdict;
  journal.record({ kind: 'outcome', status: verdict.status, summary: verdict.summary });
  journal.finished = true;
  return verdict;
}
