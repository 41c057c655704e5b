import { mkdir } from 'node:fs/promises';
import { log } from '@temporalio/activity';
import { failure, FailureCode } from '../../core/failures';
import type { GateSuiteResult } from '../../core/types';
import { gateFilePath, parseGateFile, type GateFileParse } from '../../core/gate-file';
import { devcontainerPath } from '../../core/environment';
import { environmentOf, type EnvironmentParse } from '../../core/environment-source';
import { conflictMarkersIn, verifyVerdict } from '../../policies/verify';
import { gateFileProblem, type GateFileApproval, type GateFileFacts } from '../../policies/gate-file-change';
import { automationGit, catFileBatch, changedPaths, ensureMirror, ensureWorkspace, fetchRefs, gitExitCode, objectAt, originGit } from './git';
import { gateFileFactsIn } from './gate-file-facts';
import { recordInManifest, runPaths } from '../stores/run-store';

interface WorkspaceHead {
  headSha: string;
  treeSha: string;
  /** Commits on HEAD that are not on `since`. */
  commitsSince: number;
}

interface VerifyLandingInput {
  runId: string;
  targetSha: string;
  headSha: string;
  gates: GateSuiteResult[];
  suiteIds: string[];
  dropped: string[];
  /** When the landing has a review panel: the tree its approving verdict was for. */
  reviewedTreeSha?: string | null;
  /** The gate-file version an operator approved (absent: none; a head that changes the gate file is refused). */
  approvedGateFile?: GateFileApproval;
}

interface FastForwardInput {
  runId: string;
  repo: string;
  target: string;
  expectedTargetSha: string;
  headSha: string;
}

/** What verify reads from git: facts of two commits, so the same whenever they are read. */
interface VerifyFacts {
  commitsOver: string;
  trees: Awaited<ReturnType<typeof catFileBatch>>;
  ancestry: number;
  gateFacts: GateFileFacts;
  markerDiff: string;
}

/** Most verify reads begun ahead and not yet taken (each is taken once; the oldest go first). */
const maxFactsAhead = 64;

/**
 * Verify's reads of a run's two SHAs: begun ahead (the placement, once the first rebase is done,
 * so that verify finds them read when the gate is over) and taken once by verify in this process
 * (a verify elsewhere, or a read that failed, reads them again).
 */
function createVerifyFacts(dataDir: string) {
  /** Every fact verify checks, read on exactly the two SHAs; the reads are independent, so side by side. */
  const readVerifyFacts = async (runId: string, targetSha: string, headSha: string): Promise<VerifyFacts> => {
    const worktree = runPaths(dataDir, runId).worktree;
    const git = automationGit(worktree);
    const [commitsOver, trees, ancestry, gateFacts, markerDiff] = await Promise.all([
      git.raw(['rev-list', '--count', `${targetSha}..${headSha}`]),
      catFileBatch(worktree, [`${headSha}^{tree}`, `${targetSha}^{tree}`]),
      gitExitCode(worktree, ['merge-base', '--is-ancestor', targetSha, headSha]),
      gateFileFactsIn(worktree, targetSha, headSha),
      // Only the files whose changes add or remove a conflict marker line (-G), zero context, no diff drivers.
      git.raw(['diff', '--no-color', '--no-ext-diff', '--no-textconv', '--no-renames', '-U0', '-G^(<{7}|>{7}|[|]{7})( |$)|^={7}$', targetSha, headSha]),
    ]);
    return { commitsOver, trees, ancestry, gateFacts, markerDiff };
  };
  /** Verify reads begun while the gate runs, by run and the two SHAs. */
  const factsAhead = new Map<string, Promise<VerifyFacts>>();
  const factsKey = (runId: string, targetSha: string, headSha: string) => `${runId}\0${targetSha}\0${headSha}`;
  return {
    /** Begins the reads now; not awaited. */
    readAhead(runId: string, targetSha: string, headSha: string): void {
      const key = factsKey(runId, targetSha, headSha);
      if (factsAhead.has(key)) return;
      for (const oldest of factsAhead.keys()) {
        if (factsAhead.size < maxFactsAhead) break;
        factsAhead.delete(oldest);
      }
      const reading = readVerifyFacts(runId, targetSha, headSha);
      reading.catch(() => factsAhead.delete(key));
      factsAhead.set(key, reading);
    },
    /** The facts read ahead on these very SHAs (facts of two commits do not change), else read now. */
    async take(runId: string, targetSha: string, headSha: string): Promise<VerifyFacts> {
      const key = factsKey(runId, targetSha, headSha);
      const ahead = factsAhead.get(key);
      factsAhead.delete(key);
      return (await ahead?.catch(() => undefined)) ?? (await readVerifyFacts(runId, targetSha, headSha));
    },
  };
}

/**
 * Moves the target on origin to exactly the verified SHA, fast-forward only, and
 * only from the value the landing verified against (`expectedTargetSha`).
 * Idempotent: a retry after a push that landed finds the target containing the
 * verified head (equal to it, or with later commits on top: ancestry, not
 * equality) and reports `alreadyMerged` instead of a moved target.
 */
async function fastForwardTarget(
  dataDir: string,
  { runId, repo, target, expectedTargetSha, headSha }: FastForwardInput,
): Promise<{ mergedSha: string; alreadyMerged: boolean }> {
  const worktree = runPaths(dataDir, runId).worktree;
  // Every command here talks to the origin: only its own protocol, no prompt (originGit).
  const git = originGit(worktree, repo);
  const targetRef = `refs/heads/${target}`;
  const remoteHead = async () => (await git.listRemote([repo, targetRef])).trim().split(/\s+/)[0] ?? '';
  /** True when the target's history (as origin has it now) already holds the verified head. */
  const targetContainsHead = async (seen: string): Promise<boolean> => {
    if (seen === headSha) return true;
    if (!seen) return false;
    // Fetched into FETCH_HEAD only (no ref of the workspace changes): the commits on top are new to us.
    try {
      await git.raw(['fetch', '--no-tags', '--quiet', repo, targetRef]);
    } catch {
      return false;
    }
    return (await gitExitCode(worktree, ['merge-base', '--is-ancestor', headSha, 'FETCH_HEAD'])) === 0;
  };
  const merged = (how: string) => {
    log.info(how, { target, headSha });
    return { mergedSha: headSha, alreadyMerged: true };
  };

  // Not read before the push: the lease below makes origin check the target under the ref's
  // lock, and only a refused push needs to know what the target is now.
  if ((await gitExitCode(worktree, ['merge-base', '--is-ancestor', expectedTargetSha, headSha])) !== 0) {
    throw failure(
      FailureCode.notFastForward,
      `${headSha.slice(0, 12)} does not descend from ${target} at ${expectedTargetSha.slice(0, 12)}; nothing was pushed`,
    );
  }
  try {
    // Never a force push, although the option is spelled "force": the refspec has no `+`,
    // the lease pins the target's old value to exactly `expectedTargetSha` (origin checks
    // it under the ref's lock, so a target moved by anyone since is refused, not
    // overwritten), and the check just above makes `expectedTargetSha` an ancestor of
    // `headSha`: the only update this push can make is that one fast-forward.
    const pushed = await git.raw([
      'push',
      '--porcelain',
      '--no-verify',
      `--force-with-lease=${targetRef}:${expectedTargetSha}`,
      repo,
      `${headSha}:${targetRef}`,
    ]);
    // `=`: the target already is the head (a retry after a push that landed); git checks no lease then.
    if (pushed.split('\n').some((line) => line.startsWith('=\t'))) return merged('target already is the verified head');
  } catch (error) {
    const now = await remoteHead();
    // A retry after a push that landed is refused by the lease: the target already holds the head.
    if (await targetContainsHead(now)) return merged(now === headSha ? 'target already is the verified head' : 'the target already contains the verified head');
    if (now !== expectedTargetSha) {
      throw failure(FailureCode.targetMoved, `target ${target} moved during the push to ${now.slice(0, 12) || '(deleted)'}; the push was refused`, {
        expected: expectedTargetSha,
        actual: now,
      });
    }
    // The origin answered and refused (a hook, a protected branch): a retry would be refused the
    // same way. Anything else (the transport) may pass on a retry.
    const refused = /\[remote rejected\][^\n]*|\[rejected\][^\n]*/.exec(error instanceof Error ? error.message : String(error));
    if (refused)
      throw failure(FailureCode.pushRefused, `the origin refused the push of ${headSha.slice(0, 12)} to ${target}: ${refused[0].trim()}; nothing was pushed`);
    throw error;
  }
  log.info('target fast-forwarded', { target, from: expectedTargetSha, to: headSha });
  return { mergedSha: headSha, alreadyMerged: false };
}

/** Capsules of a landing that work in its run workspace (`runs/<id>/worktree`). */
export function createLandingCapsules({ dataDir, hostId }: { dataDir: string; hostId: string }) {
  const workspaceGit = (runId: string) => automationGit(runPaths(dataDir, runId).worktree);

  const verifyFacts = createVerifyFacts(dataDir);

  return {
    /** Creates the run's workspace at the target head (the rebase builds on it) and records it in the manifest. */
    prepareRun: async ({ runId, repo, targetSha }: { runId: string; repo: string; targetSha: string }): Promise<{ workspace: string }> => {
      const mirror = await ensureMirror(dataDir, repo);
      const paths = runPaths(dataDir, runId);
      await mkdir(paths.runDir, { recursive: true });
      // Recorded before it exists: a crash between the two still leaves cleanup knowing it is ours.
      await recordInManifest(
        paths.manifest,
        { runId, repo, mirror, hostId, createdAt: new Date().toISOString(), containerRunLabel: runId },
        { worktrees: [paths.worktree] },
      );
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

    /** The tree of a commit the run's workspace holds (the base a red suite is run on again, workflows/landing/flake.ts). */
    treeOf: async ({ runId, sha }: { runId: string; sha: string }): Promise<{ treeSha: string }> => ({
      treeSha: (await workspaceGit(runId).revparse([`${sha}^{tree}`])).trim(),
    }),

    /** For a review of `base...HEAD`: the head, its tree, and the files changed since the merge base. */
    diffFacts: async ({ runId, base }: { runId: string; base: string }): Promise<{ headSha: string; treeSha: string; files: string[] }> => {
      const git = workspaceGit(runId);
      const headSha = (await git.revparse(['HEAD'])).trim();
      const files = (await git.raw(['diff', '--name-only', `${base}...HEAD`])).split('\n').filter(Boolean);
      return { headSha, treeSha: (await git.revparse([`${headSha}^{tree}`])).trim(), files };
    },

    /**
     * Files the landing changes relative to the target, without rename detection: a file
     * renamed away is listed under its old path too, so a question about that path is asked.
     */
    changedFiles: async ({ runId, targetSha, headSha = 'HEAD' }: { runId: string; targetSha: string; headSha?: string }): Promise<string[]> =>
      await changedPaths(workspaceGit(runId), targetSha, headSha),

    /** The gate file's state on exactly `headSha` against `targetSha`: changed paths and the objects at its path. */
    gateFileFacts: async ({ runId, targetSha, headSha }: { runId: string; targetSha: string; headSha: string }): Promise<GateFileFacts> =>
      await gateFileFactsIn(runPaths(dataDir, runId).worktree, targetSha, headSha),

    /**
     * Reads and validates the gate file of `sha` (a target that moved, fetched into this
     * host's mirror by `currentTarget`); `blob` is the object at its path, null when missing.
     */
    readGateFile: async ({
      repo,
      sha,
    }: {
      repo: string;
      sha: string;
    }): Promise<{ gate: GateFileParse; blob: string | null; environment?: EnvironmentParse }> => {
      const git = automationGit(await ensureMirror(dataDir, repo));
      const object = await objectAt(git, sha, gateFilePath);
      if (object?.type !== 'blob')
        return {
          gate: { ok: false, field: '(file)', message: `is missing from the target at ${sha.slice(0, 12)}` },
          blob: object?.oid ?? null,
          environment: { ok: true },
        };
      const gate = parseGateFile(await git.raw(['cat-file', 'blob', object.oid]));
      // The environment as the target declares it at `sha` (the gate file's, else its devcontainer's).
      const devcontainer = await objectAt(git, sha, devcontainerPath);
      const devcontainerText = devcontainer?.type === 'blob' ? await git.raw(['cat-file', 'blob', devcontainer.oid]) : undefined;
      return { gate, blob: object.oid, environment: environmentOf(gate, devcontainerText) };
    },

    /**
     * Begins verify's reads of two SHAs now (the placement, once the first rebase is done), so
     * that verify finds them read when the gate is over. Not awaited; taken once by verify in
     * this process (a verify elsewhere reads them itself).
     */
    readVerifyFactsAhead: ({ runId, targetSha, headSha }: { runId: string; targetSha: string; headSha: string }): void =>
      verifyFacts.readAhead(runId, targetSha, headSha),

    /**
     * The last mechanical check before merge: the landing adds commits, changes the
     * tree, descends from the target, dropped no patch, leaves the gate file as the
     * target has it or as an operator approved it, and every declared suite passed on
     * exactly this tree.
     */
    verifyLanding: async ({
      runId,
      targetSha,
      headSha,
      gates,
      suiteIds,
      dropped,
      reviewedTreeSha,
      approvedGateFile,
    }: VerifyLandingInput): Promise<{ ok: boolean; problems: string[]; repairable: boolean }> => {
      // Every fact read from git, on exactly the SHAs to be merged: the workflow's view is not the
      // only guard. Read while the gate ran when the placement began them on these very SHAs (facts
      // of two commits do not change); a read that failed is read again here.
      const { commitsOver, trees, ancestry, gateFacts, markerDiff } = await verifyFacts.take(runId, targetSha, headSha);
      return verifyVerdict({
        commitsOver: Number(commitsOver.trim()),
        headTree: trees[0]?.oid ?? '',
        targetTree: trees[1]?.oid ?? '',
        headDescendsFromTarget: ancestry === 0,
        dropped,
        gateFileProblem: gateFileProblem(gateFacts, approvedGateFile) ?? undefined,
        reviewedTreeSha,
        gates,
        suiteIds,
        conflictMarkers: conflictMarkersIn(markerDiff),
      });
    },

    /** Moves the target on origin to exactly the verified SHA, fast-forward only (fastForwardTarget above). */
    fastForwardTarget: async (input: FastForwardInput): Promise<{ mergedSha: string; alreadyMerged: boolean }> => await fastForwardTarget(dataDir, input),

    /** Fetches the target's current head into the mirror and returns it (did it move while we waited?). */
    currentTarget: async ({ repo, target }: { repo: string; target: string }): Promise<string> => {
      const mirror = await ensureMirror(dataDir, repo);
      await fetchRefs(mirror, repo, [target]);
      return (await automationGit(mirror).revparse([`refs/remotes/origin/${target}^{commit}`])).trim();
    },
  };
}

export type LandingCapsules = ReturnType<typeof createLandingCapsules>;
