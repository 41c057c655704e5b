import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BranchHead } from '../../core/types';
import type { GateFileFacts } from '../../policies/gate-file-change';
import { automationGit, gitArgs, gitExitCode } from './git';
import { gateFileFactsIn } from './gate-file-facts';
import { runPaths, writeFileAtomic } from '../stores/run-store';
import { leanPipe } from './lean-spawn';

/** What the rebase capsule has done so far, kept next to the workspace so a retry resumes it. */
interface RebaseState {
  targetSha: string;
  applied: { branch: string; newHead: string }[];
  /** The branch whose rebase is running or stopped at a conflict. */
  inProgress?: string;
}

interface RebaseInput {
  runId: string;
  targetSha: string;
  heads: BranchHead[];
  /**
   * The head a resolver delivered for the branch whose rebase stopped: the resolver
   * finished that rebase in its own copy, and its commits were imported from its bundle.
   */
  resolvedHead?: string;
}

/** A rebase onto a moved target: the new head, or the conflict it stopped at (left stopped for a resolver). */
type RebaseOntoResult = { status: 'done'; headSha: string } | Extract<RebaseResult, { status: 'conflict' }>;

export type RebaseResult =
  | {
      status: 'done';
      headSha: string;
      treeSha: string;
      /** Commits of the aggregate head over the target. */
      commitsSince: number;
      /** Files the landing changes relative to the target. */
      changedFiles: string[];
      /** The gate file on this head against the target (the questions phase needs no other read). */
      gateFile: GateFileFacts;
      provenance: ProvenanceEntry[];
      dropped: ProvenanceEntry[];
    }
  | { status: 'conflict'; branch: string; commit: string; subject: string; files: string[]; baseSha: string };

export interface ProvenanceEntry {
  branch: string;
  original: string;
  subject: string;
  /** The rebased copy, or null when the patch is already in the target or was dropped. */
  rebased: string | null;
  how: 'identical' | 'resolved' | 'already-upstream' | 'dropped';
}

interface PatchCheckInput {
  runId: string;
  targetSha: string;
  heads: BranchHead[];
}

function rebaseRunning(workspace: string): boolean {
  return existsSync(join(workspace, '.git', 'rebase-merge')) || existsSync(join(workspace, '.git', 'rebase-apply'));
}

async function unmergedFiles(workspace: string): Promise<string[]> {
  const out = await automationGit(workspace).raw(['diff', '--name-only', '--diff-filter=U']);
  return out.split('\n').filter(Boolean);
}

/**
 * A rebase git left running with no conflict to show was interrupted (its worker, and git with it,
 * killed mid-way): aborted, so the rebase can run again from where it began. A rebase stopped at a
 * conflict has unmerged files and is left for a resolver.
 */
async function interruptedRebaseUndone(workspace: string): Promise<void> {
  if (!rebaseRunning(workspace) || (await unmergedFiles(workspace)).length > 0) return;
  // A rebase killed before it wrote its own state cannot be aborted: its state is dropped instead
  // (the patch check after every rebase still finds any commit this loses).
  if ((await gitExitCode(workspace, ['rebase', '--abort'])) !== 0) await gitExitCode(workspace, ['rebase', '--quit']);
}

async function conflictAt(workspace: string, branch: string): Promise<Extract<RebaseResult, { status: 'conflict' }>> {
  const git = automationGit(workspace);
  const stopped = (await readFile(join(workspace, '.git', 'rebase-merge', 'stopped-sha'), 'utf8').catch(() => '')).trim();
  const commit = stopped || (await git.revparse(['REBASE_HEAD']).catch(() => '')).trim();
  const subject = commit ? (await git.raw(['log', '-1', '--format=%s', commit])).trim() : '';
  return { status: 'conflict', branch, commit, subject, files: await unmergedFiles(workspace), baseSha: (await git.revparse(['HEAD'])).trim() };
}

/**
 * The stable patch id of each commit (`git show` of them all, one stream into `git patch-id`).
 * A commit whose diff is empty has no patch id: it maps to ''.
 */
async function patchIds(workspace: string, shas: string[]): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  if (shas.length === 0) return ids;
  const [show, patchId] = await leanPipe(
    { command: 'git', args: gitArgs(workspace, 'show', '--no-color', '--no-ext-diff', '--format=commit %H', ...new Set(shas)), stderr: 'ignore' },
    { command: 'git', args: gitArgs(workspace, 'patch-id', '--stable'), stderr: 'ignore' },
  );
  if (show.code !== 0) throw new Error(`git show exited ${show.code}`);
  if (patchId.code !== 0) throw new Error(`git patch-id exited ${patchId.code}`);
  const out = patchId.stdout.toString('utf8');
  // One line per commit with a diff: "<patch id> <commit>".
  for (const line of out.split('\n')) {
    const [id, commit] = line.split(' ');
    if (id && commit) ids.set(commit, id);
  }
  for (const sha of shas) if (!ids.has(sha)) ids.set(sha, '');
  return ids;
}

/**
 * Never lose work: every original commit of every branch must be in the result —
 * as a rebased copy (same author, date and subject), or as a patch already in
 * the target. Anything else is reported as dropped.
 */
async function checkPatchesIn(
  workspace: string,
  { targetSha, heads }: PatchCheckInput,
): Promise<{ provenance: ProvenanceEntry[]; dropped: ProvenanceEntry[]; commitsSince: number; headTree?: string }> {
  const git = automationGit(workspace);
  const identity = '%an%x00%ae%x00%ad%x00%s';
  const rebased = new Map<string, string>();
  // Newest first: the first line's tree is HEAD's; the lines are the commits over the target.
  const lines = (await git.raw(['log', '--format=%H%x00%T%x00' + identity, '--date=raw', `${targetSha}..HEAD`])).split('\n').filter(Boolean);
  for (const line of lines) {
    const [sha, , ...rest] = line.split('\0');
    rebased.set(rest.join('\0'), sha!);
  }
  const headTree = lines[0]?.split('\0')[1];
  const seen = new Set<string>();
  const candidates: { branch: string; original: string; subject: string; copy?: string }[] = [];
  for (const head of heads) {
    const originals = (await git.raw(['log', '--reverse', '--format=%H%x00' + identity, '--date=raw', `${targetSha}..${head.sha}`]))
      .split('\n')
      .filter(Boolean);
    for (const line of originals) {
      const [original, ...rest] = line.split('\0');
      if (!original || seen.has(original)) continue;
      seen.add(original);
      const copy = rebased.get(rest.join('\0'));
      candidates.push({ branch: head.branch, original, subject: rest[3] ?? '', ...(copy ? { copy } : {}) });
    }
  }
  // patch-id --stable ignores line numbers and whitespace: the same change rebased elsewhere keeps
  // its id. One `git show` of every commit to compare, piped into one `git patch-id`.
  const ids = await patchIds(
    workspace,
    candidates.flatMap((entry) => (entry.copy ? [entry.original, entry.copy] : [])),
  );
  const provenance: ProvenanceEntry[] = [];
  for (const { branch, original, subject, copy } of candidates) {
    if (copy) {
      provenance.push({ branch, original, subject, rebased: copy, how: ids.get(copy) === ids.get(original) ? 'identical' : 'resolved' });
      continue;
    }
    // `git cherry` marks with "-" a commit whose patch is already in HEAD's history.
    const cherry = (await git.raw(['cherry', 'HEAD', original, `${original}^`])).trim();
    provenance.push({ branch, original, subject, rebased: null, how: cherry.startsWith('-') ? 'already-upstream' : 'dropped' });
  }
  return { provenance, dropped: provenance.filter((entry) => entry.how === 'dropped'), commitsSince: lines.length, ...(headTree ? { headTree } : {}) };
}

export function createRebaseActivities({ dataDir }: { dataDir: string }) {
  const statePath = (runId: string) => join(runPaths(dataDir, runId).runDir, 'rebase-state.json');
  const readState = async (runId: string, targetSha: string): Promise<RebaseState> => {
    try {
      const state = JSON.parse(await readFile(statePath(runId), 'utf8')) as RebaseState;
      if (state.targetSha === targetSha) return state;
    } catch {
      // No state yet (or unreadable): start from the target.
    }
    return { targetSha, applied: [] };
  };

  return {
    /**
     * Rebases the branches, in the order given, onto the target head in the run's
     * workspace, with rerere off. Resumable: it continues where an earlier call left
     * off, taking a resolver's delivered head for the branch that stopped. Stops at a
     * conflict and reports the commit and the conflicted files; never resolves anything itself.
     * `rebased` (the placement's) runs beside the patch check once the head is known.
     */
    rebaseBranches: async (
      { runId, targetSha, heads, resolvedHead }: RebaseInput,
      { rebased }: { rebased?: (headSha: string) => Promise<void> } = {},
    ): Promise<RebaseResult> => {
      const workspace = runPaths(dataDir, runId).worktree;
      const git = automationGit(workspace);
      const state = await readState(runId, targetSha);
      // Atomic but not synced: it resumes a rebase after a worker crash, and the workspace it
      // describes is not synced either (a lost host re-prepares the run).
      const save = () => writeFileAtomic(statePath(runId), `${JSON.stringify(state, null, 2)}\n`, { durable: false });

      if (state.inProgress) {
        const onto = state.applied[state.applied.length - 1]?.newHead ?? targetSha;
        // Only a resolution built on the same base is taken; anything else stops at the conflict again.
        // (Idempotent: a retry after the abort checks the resolution out again.)
        if (resolvedHead && (await gitExitCode(workspace, ['merge-base', '--is-ancestor', onto, resolvedHead])) === 0) {
          if (rebaseRunning(workspace)) await gitExitCode(workspace, ['rebase', '--abort']);
          await git.raw(['checkout', '--quiet', '--detach', resolvedHead]);
          state.applied.push({ branch: state.inProgress, newHead: resolvedHead });
        } else if (rebaseRunning(workspace) && (await unmergedFiles(workspace)).length > 0) {
          return await conflictAt(workspace, state.inProgress);
        } else {
          // No resolution and no conflict: the call before was stopped (its worker killed) between
          // saving this state and the end of its rebase, so HEAD says nothing about the branch (it
          // may still be the base). Undo what git left and rebase the branch again, below.
          await interruptedRebaseUndone(workspace);
        }
        delete state.inProgress;
        await save();
      }

      for (const head of heads.slice(state.applied.length)) {
        const onto = state.applied[state.applied.length - 1]?.newHead ?? targetSha;
        const upstream = (await git.raw(['merge-base', targetSha, head.sha])).trim();
        state.inProgress = head.branch;
        await save();
        const code = await gitExitCode(workspace, ['-c', 'core.editor=true', 'rebase', '--no-autosquash', '--onto', onto, upstream, head.sha]);
        if (code !== 0) {
          // The stopped rebase stays here; a resolver finishes it in a copy of its own.
          if (rebaseRunning(workspace)) return await conflictAt(workspace, head.branch);
          throw new Error(`git rebase of ${head.branch} failed (exit ${code}) without stopping at a conflict`);
        }
        state.applied.push({ branch: head.branch, newHead: (await git.revparse(['HEAD'])).trim() });
        delete state.inProgress;
        await save();
      }
      // Done: the patch check and the facts the next phases need, in the same capsule (one round
      // trip), read side by side.
      const headSha = state.applied[state.applied.length - 1]?.newHead ?? (await git.revparse(['HEAD'])).trim();
      const [{ commitsSince, headTree, ...patches }, gateFile] = await Promise.all([
        checkPatchesIn(workspace, { runId, targetSha, heads }),
        gateFileFactsIn(workspace, targetSha, headSha),
        rebased?.(headSha),
      ]);
      return {
        status: 'done',
        headSha,
        treeSha: headTree ?? (await git.revparse([`${headSha}^{tree}`])).trim(),
        commitsSince,
        // No rename detection: a renamed file shows both its old and its new path.
        changedFiles: gateFile.changedPaths,
        gateFile,
        ...patches,
      };
    },

    /**
     * Moves the workspace's commits over `fromSha` onto `ontoSha` (the target moved while the
     * landing waited to merge), rerere off. A conflict leaves the rebase stopped in the workspace and
     * is reported like a branch's (commit, subject, files): a resolver finishes it in a copy of its own,
     * and the next call takes its delivered head (`resolvedHead`) when that head is built on `ontoSha`.
     * Resumable: a call that finds the rebase still stopped reports the conflict again.
     */
    rebaseOnto: async ({
      runId,
      fromSha,
      ontoSha,
      resolvedHead,
    }: {
      runId: string;
      fromSha: string;
      ontoSha: string;
      resolvedHead?: string;
    }): Promise<RebaseOntoResult> => {
      const workspace = runPaths(dataDir, runId).worktree;
      const git = automationGit(workspace);
      const label = `onto ${ontoSha.slice(0, 12)}`;
      if (rebaseRunning(workspace) && (resolvedHead || (await unmergedFiles(workspace)).length > 0)) {
        if (!resolvedHead || (await gitExitCode(workspace, ['merge-base', '--is-ancestor', ontoSha, resolvedHead])) !== 0)
          return await conflictAt(workspace, label);
        await gitExitCode(workspace, ['rebase', '--abort']);
        await git.raw(['checkout', '--quiet', '--detach', resolvedHead]);
        return { status: 'done', headSha: resolvedHead };
      }
      // A rebase interrupted mid-way leaves HEAD anywhere on the new target: undone before HEAD is read.
      await interruptedRebaseUndone(workspace);
      // Done already (a retry after the result was lost): the head is on the new target.
      if ((await gitExitCode(workspace, ['merge-base', '--is-ancestor', ontoSha, 'HEAD'])) === 0)
        return { status: 'done', headSha: (await git.revparse(['HEAD'])).trim() };
      const code = await gitExitCode(workspace, ['-c', 'core.editor=true', 'rebase', '--no-autosquash', '--onto', ontoSha, fromSha]);
      if (code !== 0) {
        if (rebaseRunning(workspace)) return await conflictAt(workspace, label);
        throw new Error(`git rebase onto ${ontoSha} failed (exit ${code}) without stopping at a conflict`);
      }
      return { status: 'done', headSha: (await git.revparse(['HEAD'])).trim() };
    },

    /** The patch check alone (after a rebase onto a moved target). */
    checkPatches: async (input: PatchCheckInput) => {
      const { provenance, dropped } = await checkPatchesIn(runPaths(dataDir, input.runId).worktree, input);
      return { provenance, dropped };
    },
  };
}

export type RebaseActivities = ReturnType<typeof createRebaseActivities>;
