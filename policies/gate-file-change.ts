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

/** One file at one path on the target and on the head: its object ids (null when the path holds nothing). */
export interface DeclarationFileFacts {
  path: string;
  targetBlob: string | null;
  headBlob: string | null;
}

/** The gate file's state on one head against one target, as read by `capsule.gateFileFacts`. */
export interface GateFileFacts {
  /** Paths the head changes relative to the target, computed without rename detection. */
  changedPaths: string[];
  /** Object id at the gate-file path in the target's tree; null when the path holds nothing. */
  targetBlob: string | null;
  /** Object id at the gate-file path in the head's tree; null when the path holds nothing. */
  headBlob: string | null;
  /**
   * The environment's declaration files other than the gate file (issue 24): always
   * `.devcontainer/devcontainer.json`, the Dockerfile the target's declaration names, and the
   * one the head's would name. A change to any of them changes what is built (with egress) from
   * the tree under test, so it is asked about like the gate file. Absent in facts read before
   * environments: none.
   */
  declarationFiles?: DeclarationFileFacts[];
}

/**
 * An approval is for one exact version. A change of the gate file alone: the object at its
 * path (null: the approved change deletes it). A change that involves a declaration file: the
 * changed paths with their head objects (`approvalKey`), so it covers exactly that combination.
 */
export interface GateFileApproval {
  blob: string | null;
}

export type GateFileChangeKind = 'adds' | 'deletes' | 'edits';

/** One changed file of the gate file and the declaration files, and how the head changes it. */
export interface ChangedFile {
  path: string;
  change: GateFileChangeKind;
}

export type GateFileDecision =
  | { kind: 'unchanged' }
  | { kind: 'approved'; blob: string | null }
  /**
   * `files`: only when a declaration file changes, every changed file (the gate file first,
   * then by path); `change` is then the gate file's change, or the first file's.
   */
  | { kind: 'ask'; change: GateFileChangeKind; blob: string | null; files?: ChangedFile[] };

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * How the head changes one file, or undefined when it does not. Two signals, either of which
 * counts: the path is in the changed set (which, without rename detection, also lists a file
 * renamed away), or the objects at the path differ (which holds even if the path list were
 * computed some other way).
 */
function changeOf(file: DeclarationFileFacts, changedPaths: readonly string[]): GateFileChangeKind | undefined {
  if (!changedPaths.includes(file.path) && file.targetBlob === file.headBlob) return undefined;
  return file.headBlob === null ? 'deletes' : file.targetBlob === null ? 'adds' : 'edits';
}

// A path may hold ";" or "=" (and "%"): escaped, so that two different combinations never make one key.
const keyPath = (path: string) => path.replace(/[%;=]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`);

/** The approval's `blob` for a combination: `path=oid|null` of each changed file, by path, joined by ";". */
export function approvalKey(files: readonly DeclarationFileFacts[]): string {
  return [...files]
    .sort((a, b) => byCodeUnit(a.path, b.path))
    .map((file) => `${keyPath(file.path)}=${file.headBlob ?? 'null'}`)
    .join(';');
}

/**
 * Does this head change the gate file or a declaration file, and is that exact change
 * approved? An approval covers only the version it was given for: a later head that
 * changes any of the files again is asked about. A change of the gate file alone decides
 * (and is approved) as it always was, by the gate file's object.
 */
export function gateFileDecision(facts: GateFileFacts, approval?: GateFileApproval): GateFileDecision {
  const gate = { path: gateFilePath, targetBlob: facts.targetBlob, headBlob: facts.headBlob };
  // By path, the gate file itself and repeats left out (the reader lists each path once; a Dockerfile may be named twice).
  const byPath = new Map<string, DeclarationFileFacts>();
  for (const file of facts.declarationFiles ?? []) if (file.path !== gateFilePath && !byPath.has(file.path)) byPath.set(file.path, file);
  const declared = [...byPath.values()].sort((a, b) => byCodeUnit(a.path, b.path));
  const changed = [gate, ...declared].flatMap((file) => {
    const change = changeOf(file, facts.changedPaths);
    return change ? [{ file, change }] : [];
  });
  const [first] = changed;
  if (!first) return { kind: 'unchanged' };
  const onlyGateFile = changed.length === 1 && first.file === gate;
  const blob = onlyGateFile ? facts.headBlob : approvalKey(changed.map(({ file }) => file));
  if (approval && approval.blob === blob) return { kind: 'approved', blob };
  if (onlyGateFile) return { kind: 'ask', change: first.change, blob };
  return { kind: 'ask', change: first.change, blob, files: changed.map(({ file, change }) => ({ path: file.path, change })) };
}

/** "a", "a and b", "a, b and c". */
function listed(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** What the head changes, for a `why`: the gate file, the environment's declaration, or both. */
export function changedSubject(files?: readonly ChangedFile[]): string {
  if (!files) return 'the gate file';
  return files.some((file) => file.path === gateFilePath) ? "the gate file and the environment's declaration" : "the environment's declaration";
}

/**
 * The question asked for a change of the gate file (or, with `files`, of the gate file and
 * the environment's declaration files: each named with its change); it names the vocabulary that approves.
 */
export function gateFileQuestion(change: GateFileChangeKind, headSha: string, when: string, files?: readonly ChangedFile[]): string {
  const words = gateFileApprovals.map((word) => `"${word}"`).join(', ');
  const head = `head ${headSha.slice(0, 12)}`;
  const asked = files
    ? `${when}, this landing ${listed(files.map((file) => `${file.change} ${file.path}`))} (${head}), ${declarationRole(files)}.`
    : `${when}, this landing ${change} ${gateFilePath} (${head}), the file that decides the target's gate.`;
  const version = files && files.length > 1 ? 'exactly these versions' : 'exactly this version';
  return [asked, `Answer ${words} to approve ${version}; an empty answer stops the landing, and any other answer is a refusal that also stops it.`].join(' ');
}

function declarationRole(files: readonly ChangedFile[]): string {
  if (files.some((file) => file.path === gateFilePath)) return "the files that decide the target's gate and declare its environment";
  return files.length > 1 ? "files that declare the repository's environment" : "a file that declares the repository's environment";
}

/** Verify's check: a problem when the head changes the gate file or a declaration file and that exact version is not approved. */
export function gateFileProblem(facts: GateFileFacts, approval?: GateFileApproval): string | undefined {
  const decision = gateFileDecision(facts, approval);
  if (decision.kind !== 'ask') return undefined;
  if (!decision.files) return `the head ${decision.change} ${gateFilePath} without an approval of that exact version`;
  const version = decision.files.length > 1 ? 'those exact versions' : 'that exact version';
  return `the head ${listed(decision.files.map((file) => `${file.change} ${file.path}`))} without an approval of ${version}`;
}

/**
 * Why a landing stops when its gate-file question was not approved: an empty answer, or
 * an answer outside the vocabulary (quoted, shortened, so the operator sees what was read).
 * `files`: the changed files the question named (absent: the gate file alone); `file`, the one
 * the outcome names: the gate file when it changed, else the first declaration file.
 */
export function gateFileRefusal(answer: string, files?: readonly ChangedFile[]): { summary: string; message: string; file: string } {
  const text = answer.trim();
  const change = `the change of ${files ? listed(files.map((file) => file.path)) : gateFilePath} was not approved`;
  const file = files && !files.some((changed) => changed.path === gateFilePath) ? (files[0]?.path ?? gateFilePath) : gateFilePath;
  if (text === '') return { summary: `stopped: ${change} (empty answer); nothing was merged`, message: 'empty answer', file };
  const quoted = JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
  const words = gateFileApprovals.join(', ');
  return {
    summary: `stopped: the answer ${quoted} is not an approval (only ${words} approve); ${change}; nothing was merged`,
    message: `the answer ${quoted} is not an approval`,
    file,
  };
}
