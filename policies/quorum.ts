import type { MergedFinding, ReviewerReport } from '../core/review-types';
import type { SessionOutcome } from '../core/session-types';
import type { Finding } from '../core/session-result';

export interface PanelDecision {
  status: 'approved' | 'changes-requested' | 'review-incomplete';
  delivered: number;
  quorum: number;
  /** Reviewers without a verdict (errored or unavailable; never counted as "no findings"). */
  missing: string[];
  /** Reviewers that ran and still have no verdict: each makes the panel incomplete, whatever the quorum. */
  errored: string[];
  /** Reviewers that could not start on this worker (image or key missing): not run, the quorum counts without them. */
  unavailable: string[];
  findings: MergedFinding[];
  blocking: MergedFinding[];
}

/** A finding's identity across reviewers: where it is and what it says, not who said it. */
function fingerprint(finding: Finding): string {
  const what = (finding.rule ?? finding.message).toLowerCase().replace(/\s+/g, ' ').trim();
  return `${finding.file}:${finding.line ?? 0}:${what}`;
}

/**
 * Quorum over completed reviews, and the merge. A reviewer that ran and has no verdict (errored,
 * after the respawns its session policy allowed) makes the panel `review-incomplete` whatever the
 * quorum: an errored reviewer never yields green, and is never "no findings". A reviewer that could
 * not start at all (`unavailable`: its image or key is missing on the worker) ran nothing; the
 * quorum decides over the others. Duplicate findings merge with their votes; a finding is blocking
 * when its severity is one of `blockingSeverities`.
 */
export function decidePanel(reports: readonly ReviewerReport[], quorum: number, blockingSeverities: readonly string[]): PanelDecision {
  const delivered = reports.filter((report) => report.status === 'delivered');
  const missing = reports.filter((report) => report.status !== 'delivered').map((report) => report.harnessModel);
  const errored = reports.filter((report) => report.status === 'errored').map((report) => report.harnessModel);
  const unavailable = reports.filter((report) => report.status === 'unavailable').map((report) => report.harnessModel);
  const merged = new Map<string, MergedFinding>();
  for (const report of delivered) {
    for (const finding of report.findings) {
      const key = fingerprint(finding);
      const existing = merged.get(key);
      if (existing) {
        if (!existing.votes.includes(report.harnessModel)) existing.votes.push(report.harnessModel);
      } else merged.set(key, { ...finding, fingerprint: key, votes: [report.harnessModel] });
    }
  }
  const findings = [...merged.values()].sort((a, b) => a.fingerprint.localeCompare(b.fingerprint));
  const blocking = findings.filter((finding) => blockingSeverities.includes(finding.severity));
  const status = errored.length > 0 || delivered.length < quorum ? 'review-incomplete' : blocking.length > 0 ? 'changes-requested' : 'approved';
  return { status, delivered: delivered.length, quorum, missing, errored, unavailable, findings, blocking };
}

/** A reason quoted in a verdict's one line stays short (an agent's summary can be long). */
const short = (text: string, max = 240) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * What one reviewer's session gave the panel. Only a delivered session whose result says `ok` is a
 * review (the evidence gate already respawned one that said otherwise); a reviewer that could not start
 * is `unavailable`; anything else — the session gave up after its respawns, asked instead of reviewing,
 * ran out of budget, was refused or cancelled — is `errored`, with why.
 */
export function reviewerReportOf(harnessModel: string, outcome: Pick<SessionOutcome, 'status' | 'summary' | 'result'>): ReviewerReport {
  const { status, summary, result } = outcome;
  if (status === 'delivered' && result?.status === 'ok') return { harnessModel, status: 'delivered', findings: result.findings ?? [] };
  if (status === 'agent-unavailable') return { harnessModel, status: 'unavailable', findings: [], reason: short(summary) };
  if (status === 'delivered')
    return { harnessModel, status: 'errored', findings: [], reason: short(`its result says ${result?.status ?? 'nothing'}: ${result?.summary ?? summary}`) };
  if (status === 'asked')
    return { harnessModel, status: 'errored', findings: [], reason: short(`asked instead of reviewing: ${(result?.questions ?? []).join(' / ')}`) };
  return { harnessModel, status: 'errored', findings: [], reason: short(`${status}: ${summary}`) };
}
