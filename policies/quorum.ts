import type { MergedFinding, ReviewerReport } from '../core/review-types';
import type { Finding } from '../core/session-result';

export interface PanelDecision {
  status: 'approved' | 'changes-requested' | 'review-incomplete';
  delivered: number;
  quorum: number;
  /** Reviewers that did not deliver (never counted as "no findings"). */
  missing: string[];
  findings: MergedFinding[];
  blocking: MergedFinding[];
}

/** A finding's identity across reviewers: where it is and what it says, not who said it. */
export function fingerprint(finding: Finding): string {
  const what = (finding.rule ?? finding.message).toLowerCase().replace(/\s+/g, ' ').trim();
  return `${finding.file}:${finding.line ?? 0}:${what}`;
}

/**
 * Quorum and merge: a verdict needs `quorum` delivered reports; an errored reviewer
 * counts as missing, never as "no findings". Duplicate findings merge with their
 * votes; a finding is blocking when its severity is one of `blockingSeverities`.
 */
export function decidePanel(reports: readonly ReviewerReport[], quorum: number, blockingSeverities: readonly string[]): PanelDecision {
  const delivered = reports.filter((report) => report.status === 'delivered');
  const missing = reports.filter((report) => report.status !== 'delivered').map((report) => report.harnessModel);
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
  const status = delivered.length < quorum ? 'review-incomplete' : blocking.length > 0 ? 'changes-requested' : 'approved';
  return { status, delivered: delivered.length, quorum, missing, findings, blocking };
}
