import { setHandler } from '@temporalio/workflow';
import type { CacheStatus, PanelMeters, PanelRequest, PanelReviewer, PanelVerdict, ReviewerReport } from '../../core/review-types';
import type { SessionOutcome } from '../../core/session-types';
import { eventsQuery, runEventSignal } from '../../core/messages';
import { QuestionDesk } from '../questions';
import { RunJournal } from '../run-journal';
import { decidePanel, type PanelDecision } from '../../policies/quorum';

/*
 * A review panel's record: what its `status` query shows, the reviewers' reports as they are tallied,
 * its own journal when it runs on its own, and the verdict built from them. It does not extend the
 * shared `RunRecord` (../run-record.ts): that protocol maps a run's failure to its outcome through the
 * failure table (core/failures.ts), and a panel never ends through it. An errored reviewer is a report
 * in the tally and the verdict comes from the quorum (policies/quorum.ts); forcing the protocol on the
 * panel would add a path it never takes.
 */

/** What the panel's `status` query shows. */
export interface PanelStatus {
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
export function ownJournal(input: PanelRequest): { journal: RunJournal; desk: QuestionDesk } {
  const journal = new RunJournal();
  const desk = new QuestionDesk(journal, input.reportTo);
  setHandler(eventsQuery, ({ after, limit } = {}) => journal.page(after, limit));
  setHandler(runEventSignal, ({ key, ...event }) => (event.kind === 'question' ? desk.adopt(event, key) : journal.record(event, key)));
  desk.install();
  return { journal, desk };
}

/** A reviewer's session ended: its report joins the panel's, its spend the meters. */
export function tally(
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
export function panelVerdict(
  panel: {
    name: string;
    reviewers: string[];
    quorum: number;
    blockingSeverities: Parameters<typeof decidePanel>[2];
    unavailable?: Parameters<typeof decidePanel>[3];
  },
  reports: Map<string, ReviewerReport>,
  reviewers: PanelReviewer[],
  { treeSha, cache, restored, misses, meters }: Pick<PanelVerdict, 'treeSha' | 'cache' | 'restored' | 'misses' | 'meters'>,
): PanelVerdict {
  const decision = decidePanel(
    panel.reviewers.map((name) => reports.get(name)!),
    panel.quorum,
    panel.blockingSeverities,
    panel.unavailable,
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
    ...(decision.skipped.length > 0 ? { skipped: decision.skipped } : {}),
    findings: decision.findings,
    blocking: decision.blocking,
    sessionsStarted: misses.length,
    meters,
  };
}

/** What the reviewer sessions spent, summed (a restored reviewer spent nothing in this run). */
export function panelMeters(sessions: SessionOutcome['meters'][]): PanelMeters {
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

/**
 * The verdict's one line. Incomplete: why, and every reviewer without a verdict, named with why (an
 * errored one makes it incomplete whatever the quorum; an unavailable one names the missing image or
 * key); otherwise who decided, and who was skipped because it cannot run here.
 */
function panelSummary(decision: PanelDecision, reports: Map<string, ReviewerReport>): string {
  const why = (name: string) => `${name} (${reports.get(name)?.reason ?? 'no report'})`;
  const notRun = decision.skipped.length ? `; skipped (cannot run here): ${decision.skipped.map(({ harnessModel }) => why(harnessModel)).join('; ')}` : '';
  if (decision.status === 'review-incomplete') return `review-incomplete: ${decision.incomplete}; missing ${decision.missing.map(why).join('; ')}`;
  if (decision.status === 'changes-requested') {
    return `changes requested: ${decision.blocking.length} blocking finding(s) (${decision.blocking.map((finding) => `${finding.file}:${finding.line ?? 0} ${finding.message}`).join('; ')})${notRun}`;
  }
  return `approved by ${decision.delivered} reviewer(s); ${decision.findings.length} non-blocking finding(s)${notRun}`;
}
