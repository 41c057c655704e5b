import { mkdir } from 'node:fs/promises';
import { log } from '@temporalio/activity';
import { FailureType } from '../core/errors';
import type { GateSuiteResult } from '../core/types';
import { automationGit, ensureMirror, ensureWorkspace, fetchRefs, gitExitCode, permanent } from './git';
import { recordInManifest, runPaths } from './run-store';

export interface WorkspaceHead {
  headSha: string;
  treeSha: string;
  /** Commits on HEAD that are not on `since`. */
  commitsSince: number;
}

export interface VerifyLandingInput {
  runId: string;
  targetSha: string;
  headSha: string;
  gates: GateSuiteResult[];
  suiteIds: string[];
  dropped: string[];
  /** When the landing has a review panel: the tree its approving verdict was for. */
  reviewedTreeSha?: string | null;
}

export interface FastForwardInput {
  runId: string;
  repo: string;
  target: string;
  expectedTargetSha: string;
  headSha: string;
}

/** Capsules of a landing that work in its run workspace (`runs/<id>/worktree`). */
export function createLandingCapsules({ dataDir, hostId }: { dataDir: string; hostId: string }) {
  const workspaceGit = (runId: string) => automationGit(runPaths(dataDir, runId).worktree);

  return {
    /** Creates the run's workspace at the target head (the rebase builds on it) and records it in the manifest. */
    prepareRun: async ({ runId, repo, targetSha }: { runId: string; repo: string; targetSha: string }): Promise<{ workspace: string }> => {
      const mirror = await ensureMirror(dataDir, repo);
      const paths = runPaths(dataDir, runId);
      await mkdir(paths.runDir, { recursive: true });
      // Recorded before it exists: a crash between the two still leaves cleanup knowing it is ours.
      await recordInManifest(paths.manifest, { runId, repo, mirror, hostId, createdAt: new Date().toISOString(), containerRunLabel: runId }, { worktrees: [paths.worktree] });
      await ensureWorkspace(mirror, paths.worktree, targetSha);
      return { workspace: paths.worktree };
    },

    /** HEAD of the run workspace, its tree, and how many commits it has over `since`. */
    workspaceHead: async ({ runId, since }: { runId: string; since: string }): Promise<WorkspaceHead> => {
      const git = workspaceGit(runId);
      const headSha = (await git.revparse(['HEAD'])).trim();
      return {
        headSha,
        treeSha: (await git.revparse([`${headSha}^{tree}`])).trim(),
        commitsSince: Number((await git.raw(['rev-list', '--count', `${since}..${headSha}`])).trim()),
      };
    },

    /** For a review of `base...HEAD`: the head, its tree, and the files changed since the merge base. */
    diffFacts: async ({ runId, base }: { runId: string; base: string }): Promise<{ headSha: string; treeSha: string; files: string[] }> => {
      const git = workspaceGit(runId);
      const headSha = (await git.revparse(['HEAD'])).trim();
      const files = (await git.raw(['diff', '--name-only', `${base}...HEAD`])).split('\n').filter(Boolean);
      return { headSha, treeSha: (await git.revparse([`${headSha}^{tree}`])).trim(), files };
    },

    /** Files the landing changes relative to the target (for questions such as gate-file edits). */
    changedFiles: async ({ runId, targetSha }: { runId: string; targetSha: string }): Promise<string[]> => {
      const out = await workspaceGit(runId).raw(['diff', '--name-only', `${targetSha}..HEAD`]);
      return out.split('\n').filter(Boolean);
    },

    /**
     * The last mechanical check before merge: the landing adds commits, changes the
     * tree, descends from the target, dropped no patch, and every declared suite
     * passed on exactly this tree.
     */
    verifyLanding: async ({ runId, targetSha, headSha, gates, suiteIds, dropped, reviewedTreeSha }: VerifyLandingInput): Promise<{ ok: boolean; problems: string[] }> => {
      const git = workspaceGit(runId);
      const problems: string[] = [];
      const commits = Number((await git.raw(['rev-list', '--count', `${targetSha}..${headSha}`])).trim());
      if (commits < 1) problems.push('the landing adds no commit over the target');
      const headTree = (await git.revparse([`${headSha}^{tree}`])).trim();
      const targetTree = (await git.revparse([`${targetSha}^{tree}`])).trim();
      if (headTree === targetTree) problems.push('the landing does not change the target tree');
      if ((await gitExitCode(runPaths(dataDir, runId).worktree, ['merge-base', '--is-ancestor', targetSha, headSha])) !== 0) {
        problems.push('the head is not a descendant of the target');
      }
      if (dropped.length > 0) problems.push(`dropped commits: ${dropped.join(', ')}`);
      if (reviewedTreeSha !== undefined && reviewedTreeSha !== headTree) {
        problems.push(`the review quorum was not met on tree ${headTree.slice(0, 12)}${reviewedTreeSha ? ` (approved tree: ${reviewedTreeSha.slice(0, 12)})` : ''}`);
      }
      for (const suiteId of suiteIds) {
        const passed = gates.some((gate) => gate.suiteId === suiteId && gate.treeSha === headTree && gate.status === 'passed');
        if (!passed) problems.push(`suite ${suiteId} has no passing result on tree ${headTree.slice(0, 12)}`);
      }
      return { ok: problems.length === 0, problems };
    },

    /**
     * Moves the target on origin to exactly the verified SHA, fast-forward only (a
     * plain push from the workspace: never forced). Idempotent: a retry after a push
     * that landed finds the target already there.
     */
    fastForwardTarget: async ({ runId, repo, target, expectedTargetSha, headSha }: FastForwardInput): Promise<{ mergedSha: string; alreadyMerged: boolean }> => {
      const git = workspaceGit(runId);
      const remoteHead = async () => (await git.listRemote([repo, `refs/heads/${target}`])).trim().split(/\s+/)[0] ?? '';
      const current = await remoteHead();
      if (current === headSha) return { mergedSha: headSha, alreadyMerged: true };
      if (current !== expectedTargetSha) {
        throw permanent(FailureType.targetMoved, `target ${target} moved from ${expectedTargetSha.slice(0, 12)} to ${current.slice(0, 12) || '(deleted)'}`, {
          expected: expectedTargetSha,
          actual: current,
        });
      }
      try {
        await git.raw(['push', '--quiet', repo, `${headSha}:refs/heads/${target}`]);
      } catch (error) {
        const now = await remoteHead();
        if (now === headSha) return { mergedSha: headSha, alreadyMerged: true };
        if (now !== expectedTargetSha) {
          throw permanent(FailureType.targetMoved, `target ${target} moved during the push to ${now.slice(0, 12)}`, { expected: expectedTargetSha, actual: now });
        }
        throw error;
      }
      log.info('target fast-forwarded', { target, from: expectedTargetSha, to: headSha });
      return { mergedSha: headSha, alreadyMerged: false };
    },

    /** Fetches the target's current head into the mirror and returns it (did it move while we waited?). */
    currentTarget: async ({ repo, target }: { repo: string; target: string }): Promise<string> => {
      const mirror = await ensureMirror(dataDir, repo);
      await fetchRefs(mirror, repo, [target]);
      return (await automationGit(mirror).revparse([`refs/remotes/origin/${target}^{commit}`])).trim();
    },
  };
}

export type LandingCapsules = ReturnType<typeof createLandingCapsules>;
