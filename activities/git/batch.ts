import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { log } from '@temporalio/activity';
import type { BatchMember } from '../../core/batch-types';
import { automationGit, gitExitCode } from './git';
import { runPaths } from '../stores/run-store';

/** A member on the stack: its commits rebased onto the members before it. */
export interface StackedMember {
  landingId: string;
  /** The stack's head once this member's commits are on it (the prefix ending with this member). */
  headSha: string;
  treeSha: string;
}

interface StackResult {
  stacked: StackedMember[];
  /** Members left off the stack, and why (they go on alone). */
  left: { landingId: string; reason: string }[];
}

/** Capsules of a speculative batch, in its own workspace (`runs/<batchId>/worktree`, made by capsule.prepareRun). */
export function createBatchActivities({ dataDir }: { dataDir: string }) {
  return {
    /**
     * Stacks the members, in order, onto `onto` in the batch's workspace: each member's verified
     * commits (`base..headSha`, fetched from its own run workspace on this host) rebased onto the
     * members before it, rerere off. A member whose head is already on `onto` is taken as it is (its
     * own commits). A member whose commits conflict with the stack, whose workspace is gone, or whose
     * commits are already on the stack is left off (it goes on alone). Idempotent: every call starts
     * again from `onto` (a retry after a worker crash builds the same stack).
     */
    stackBatch: async ({ batchId, onto, members }: { batchId: string; onto: string; members: BatchMember[] }): Promise<StackResult> => {
      const workspace = runPaths(dataDir, batchId).worktree;
      const git = automationGit(workspace);
      await undoRebase(workspace);
      await git.raw(['checkout', '--quiet', '--detach', '--force', onto]);
      const stacked: StackedMember[] = [];
      const left: StackResult['left'] = [];
      let head = onto;
      for (const member of members) {
        // The member's workspace belongs to the worker like this one (agents only ever get copies).
        const from = runPaths(dataDir, member.landingId).worktree;
        if (
          !existsSync(join(from, '.git')) ||
          (await gitExitCode(workspace, ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', from, member.headSha])) !== 0
        ) {
          left.push({ landingId: member.landingId, reason: `its workspace is not on this host any more (head ${member.headSha.slice(0, 12)} not found)` });
          continue;
        }
        let next: string;
        if (member.base === head) {
          next = member.headSha;
        } else {
          const code = await gitExitCode(workspace, [
            '-c',
            'core.editor=true',
            'rebase',
            '--quiet',
            '--no-autosquash',
            '--onto',
            head,
            member.base,
            member.headSha,
          ]);
          if (code !== 0) {
            await undoRebase(workspace);
            await git.raw(['checkout', '--quiet', '--detach', '--force', head]);
            left.push({ landingId: member.landingId, reason: `its commits conflict with the landings stacked before it on ${head.slice(0, 12)}` });
            continue;
          }
          next = (await git.revparse(['HEAD'])).trim();
        }
        if (next === head) {
          left.push({ landingId: member.landingId, reason: 'its changes are already on the stack' });
          continue;
        }
        await git.raw(['checkout', '--quiet', '--detach', '--force', next]);
        head = next;
        stacked.push({ landingId: member.landingId, headSha: next, treeSha: (await git.revparse([`${next}^{tree}`])).trim() });
      }
      log.info('batch stacked', { batchId, onto, stacked: stacked.length, left: left.length });
      return { stacked, left };
    },
  };
}

async function undoRebase(workspace: string): Promise<void> {
  if (!existsSync(join(workspace, '.git', 'rebase-merge')) && !existsSync(join(workspace, '.git', 'rebase-apply'))) return;
  if ((await gitExitCode(workspace, ['rebase', '--abort'])) !== 0) await gitExitCode(workspace, ['rebase', '--quit']);
}
