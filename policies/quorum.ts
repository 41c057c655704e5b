import type { PanelUnavailableRule } from '../core/recipe-schemas';
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
  /** Reviewers that could not start on this worker (image or key missing): nothing ran. */
  unavailable: string[];
  /** Under `"unavailable": "skip"`: the unavailable reviewers, left out of the quorum, each with why. */
  skipped: { harnessModel: string; reason: string }[];
  /** Why the panel is review-incomplete, in one clause (absent otherwise). */
  incomplete?: string;
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
 * not start at all (`unavailable`: its image or key is missing on the worker) ran nothing. By the
 * panel's rule for it (`unavailable` in recipes/panels.json): `incomplete` (the default) counts it
 * like an errored one — every configured reviewer counts, so the panel is incomplete naming what
 * is missing; `skip` leaves it out, listed with why, and the quorum decides over the reviewers
 * left — a quorum larger than they are cannot be met, and says so. Duplicate findings merge with
 * their votes; a finding is blocking when its severity is one of `blockingSeverities`.
 */
export function decidePanel(
  reports: readonly ReviewerReport[],
  quorum: number,
  blockingSeverities: readonly string[],
  unavailableRule: PanelUnavailableRule = 'incomplete',
): PanelDecision {
  const delivered = reports.filter((report) => report.status === 'delivered');
  const missing = reports.filter((report) => report.status !== 'delivered').map((report) => report.harnessModel);
  const errored = reports.filter((report) => report.status === 'errored').map((report) => report.harnessModel);
  const unavailable = reports.filter((report) => report.status === 'unavailable').map((report) => report.harnessModel);
  const skipped =
    unavailableRule === 'skip'
      ? reports
          .filter((report) => report.status === 'unavailable')
          .map((report) => ({ harnessModel: report.harnessModel, reason: report.reason ?? 'it cannot run here' }))
      : [];
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
  const incomplete = incompleteBecause({ delivered: delivered.length, quorum, errored, unavailable, skipped: skipped.length, reviewers: reports.length });
  const status = incomplete ? 'review-incomplete' : blocking.length > 0 ? 'changes-requested' : 'approved';
  return { status, delivered: delivered.length, quorum, missing, errored, unavailable, skipped, ...(incomplete ? { incomplete } : {}), findings, blocking };
}

/** Why a panel has no verdict, or undefined when it has one. */
function incompleteBecause(panel: {
  delivered: number;
  quorum: number;
  errored: string[];
  unavailable: string[];
  skipped: number;
  reviewers: number;
}): string | undefined {
  const { delivered, quorum, errored, unavailable, skipped, reviewers } = panel;
  if (errored.length > 0) return `an errored reviewer never yields a verdict, whatever the quorum (${delivered} delivered, quorum ${quorum})`;
  if (skipped === 0 && unavailable.length > 0)
    return `every configured reviewer counts, and ${unavailable.length} cannot run here (set what is missing, or mark the panel "unavailable": "skip")`;
  if (quorum > reviewers - skipped) return `the quorum of ${quorum} cannot be met: ${skipped} reviewer(s) skipped, ${reviewers - skipped} left`;
  if (delivered < quorum) return `${delivered} of ${quorum} required report(s)`;
  return undefined;
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
