import { gateFilePath } from '../core/gate-file';

/**
 * The only answers that approve a change of the gate file, compared after trimming and
 * lower-casing. A closed list on purpose: "ok sure", "looks fine to me" or "approved by
 * nobody in particular" are not approvals, because an answer that merely reads as
 * agreement must never widen what the target's gate lets through.
 */
export const gateFileApprovals = ['approve', 'approved', 'yes'] as const;

export type ApprovalAnswer = 'approved' | 'empty' | 'not-an-approval';

/** What an answer to a gate-file question means: only the fixed vocabulary approves. */
export function classifyApproval(text: string): ApprovalAnswer {
  const normal = text.trim().toLowerCase();
  if (normal === '') return 'empty';
  return (gateFileApprovals as readonly string[]).includes(normal) ? 'approved' : 'not-an-approval';
}

/** The gate file's state on one head against one target, as read by `capsule.gateFileFacts`. */
export interface GateFileFacts {
  /** Paths the head changes relative to the target, computed without rename detection. */
  changedPaths: string[];
  /** Object id at the gate-file path in the target's tree; null when the path holds nothing. */
  targetBlob: string | null;
  /** Object id at the gate-file path in the head's tree; null when the path holds nothing. */
  headBlob: string | null;
}

/** An approval is for one exact object at the gate-file path (null: the approved change deletes it). */
export interface GateFileApproval {
  blob: string | null;
}

export type GateFileChangeKind = 'adds' | 'deletes' | 'edits';

export type GateFileDecision =
  | { kind: 'unchanged' }
  | { kind: 'approved'; blob: string | null }
  | { kind: 'ask'; change: GateFileChangeKind; blob: string | null };

/**
 * Does this head change the gate file, and is that exact change approved? Two signals,
 * either of which counts: the path is in the changed set (which, without rename
 * detection, also lists a file renamed away), or the objects at the path differ (which
 * holds even if the path list were computed some other way). An approval covers only
 * the object it was given for: a later head that changes the file again is asked about.
 */
export function gateFileDecision(facts: GateFileFacts, approval?: GateFileApproval): GateFileDecision {
  const changed = facts.changedPaths.includes(gateFilePath) || facts.targetBlob !== facts.headBlob;
  if (!changed) return { kind: 'unchanged' };
  if (approval && approval.blob === facts.headBlob) return { kind: 'approved', blob: facts.headBlob };
  const change: GateFileChangeKind = facts.headBlob === null ? 'deletes' : facts.targetBlob === null ? 'adds' : 'edits';
  return { kind: 'ask', change, blob: facts.headBlob };
}

/** The question asked for a change of the gate file; it names the vocabulary that approves. */
export function gateFileQuestion(change: GateFileChangeKind, headSha: string, when: string): string {
  const words = gateFileApprovals.map((word) => `"${word}"`).join(', ');
  return [
    `${when}, this landing ${change} ${gateFilePath} (head ${headSha.slice(0, 12)}), the file that decides the target's gate.`,
    `Answer ${words} to approve exactly this version; an empty answer stops the landing, and any other answer is a refusal that also stops it.`,
  ].join(' ');
}

/** Verify's check: a problem when the head's gate file differs from the target's and is not the approved object. */
export function gateFileProblem(facts: GateFileFacts, approval?: GateFileApproval): string | undefined {
  const decision = gateFileDecision(facts, approval);
  if (decision.kind !== 'ask') return undefined;
  return `the head ${decision.change} ${gateFilePath} without an approval of that exact version`;
}

/**
 * Why a landing stops when its gate-file question was not approved: an empty answer, or
 * an answer outside the vocabulary (quoted, shortened, so the operator sees what was read).
 */
export function gateFileRefusal(answer: string): { summary: string; message: string } {
  const text = answer.trim();
  if (text === '') return { summary: `stopped: the change of ${gateFilePath} was not approved (empty answer); nothing was merged`, message: 'empty answer' };
  const quoted = JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
  const words = gateFileApprovals.join(', ');
  return {
    summary: `stopped: the answer ${quoted} is not an approval (only ${words} approve); the change of ${gateFilePath} was not approved; nothing was merged`,
    message: `the answer ${quoted} is not an approval`,
  };
}
