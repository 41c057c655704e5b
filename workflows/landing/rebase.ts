import { FailureCode } from '../../core/failures';
import { end, go, setHead, type LandingContext, type LandingState, type Next } from './context';
import { session } from './steps';

/** Resolver sessions one landing may start before it gives up on a conflict. */
const maxResolverSessions = 5;

/**
 * rebase: the branches onto the target (a conflict goes to a resolver agent; every original
 * commit's patch must be present) — or, after the target moved under the merge, the rebased
 * head onto the target's new head. Either way the head goes on to the questions and the gate.
 */
export async function rebase(ctx: LandingContext, state: LandingState): Promise<Next> {
  ctx.tracker.enter('rebase');
  return state.moved ? await rebaseOntoMoved(ctx, state, state.moved.to) : await rebaseBranches(ctx, state);
}

async function rebaseBranches(ctx: LandingContext, state: LandingState): Promise<Next> {
  const { runId, request, tracker } = ctx;
  const host = state.host!;
  let resolvers = 0;
  /** The head a resolver delivered for the branch whose rebase stopped (its commits, imported from its bundle). */
  let resolvedHead: string | undefined;
  for (;;) {
    const resolution = resolvedHead;
    const placed = state.placement;
    state.placement = undefined;
    const rebased = placed ?? await tracker.step('capsule.rebaseBranches', 'capsule', () => host['capsule.rebaseBranches']({ runId, targetSha: state.base, heads: request.heads, ...(resolution ? { resolvedHead: resolution } : {}) }), (value) =>
      value.status === 'done'
        ? `at ${value.headSha.slice(0, 12)}; ${value.provenance.length} original commit(s), ${value.dropped.length} missing`
        : `conflict in ${value.files.join(', ')} at ${value.commit.slice(0, 12)}`,
    );
    if (rebased.status === 'done') {
      tracker.facts.provenance = rebased.provenance;
      const dropped = rebased.dropped.filter((entry) => !state.declaredDrops.has(entry.original));
      if (dropped.length > 0) {
        return end(
          tracker.fail(FailureCode.droppedCommits, `the rebased result is missing ${dropped.length} commit(s): ${dropped.map((entry) => `${entry.original.slice(0, 12)} "${entry.subject}" (${entry.branch})`).join(', ')}; nothing was merged`, {
            message: dropped.map((entry) => entry.original).join(', '),
          }),
        );
      }
      setHead(ctx, state, { headSha: rebased.headSha, treeSha: rebased.treeSha, commitsSince: rebased.commitsSince });
      state.headFacts = { base: state.base, headSha: rebased.headSha, facts: rebased.gateFile };
      state.when = 'After the rebase';
      return go('questions');
    }
    if (resolvers >= maxResolverSessions) {
      return end(
        tracker.fail(FailureCode.conflictUnresolved, `rebase of ${rebased.branch} still conflicts at ${rebased.commit.slice(0, 12)} "${rebased.subject}" after ${resolvers} resolver session(s); nothing was merged`, {
          message: `conflicted files: ${rebased.files.join(', ')}`,
        }),
      );
    }
    resolvers += 1;
    const resolved = await session(ctx, 'resolver', `resolver-${resolvers}`, rebased.baseSha, state.hostId, {
      prompt: [
        `A rebase of branch ${rebased.branch} onto ${request.target} stopped at commit ${rebased.commit} "${rebased.subject}".`,
        `Conflicted files: ${rebased.files.join(', ')}.`,
        'Resolve each conflict keeping the intent of both sides, stage the files and run `GIT_EDITOR=true git rebase --continue`;',
        'repeat while the rebase stops again. Never drop a commit silently: list any you must drop in droppedCommits with a reason.',
      ].join('\n'),
      files: rebased.files,
    });
    // No resolver can run here: say so now, naming what is missing, instead of trying again.
    if (resolved.status === 'agent-unavailable') {
      return end(
        tracker.fail(FailureCode.agentUnavailable, `rebase of ${rebased.branch} conflicts in ${rebased.files.join(', ')} and no resolver could start: ${resolved.summary}; nothing was merged`, {
          message: resolved.failure?.message ?? resolved.summary,
        }),
      );
    }
    for (const drop of resolved.result?.droppedCommits ?? []) state.declaredDrops.set(drop.sha, drop.reason);
    resolvedHead = resolved.status === 'delivered' ? resolved.headSha : undefined;
  }
}

/** The target moved while the landing waited: the verified head onto the new target, its patches checked again. */
async function rebaseOntoMoved(ctx: LandingContext, state: LandingState, current: string): Promise<Next> {
  const { runId, request, tracker } = ctx;
  const host = state.host!;
  const moved = await tracker.step('capsule.rebaseOnto', 'capsule', () => host['capsule.rebaseOnto']({ runId, fromSha: state.base, ontoSha: current }));
  if (moved.status === 'conflict') {
    return end(
      tracker.fail(FailureCode.targetMoved, `${request.target} moved to ${current.slice(0, 12)} and the landing conflicts with it (${moved.files.join(', ')}); nothing was merged`, {
        message: `conflicts with the new target in ${moved.files.join(', ')}`,
      }),
    );
  }
  const recheck = await tracker.step('capsule.checkPatches', 'capsule', () => host['capsule.checkPatches']({ runId, targetSha: current, heads: request.heads }));
  const lost = recheck.dropped.filter((entry) => !state.declaredDrops.has(entry.original));
  if (lost.length > 0) {
    return end(
      tracker.fail(FailureCode.droppedCommits, `rebasing onto the moved target lost ${lost.map((entry) => `"${entry.subject}"`).join(', ')}; nothing was merged`, {
        message: lost.map((entry) => entry.original).join(', '),
      }),
    );
  }
  state.base = current;
  tracker.facts.targetSha = current;
  setHead(ctx, state, await host['capsule.workspaceHead']({ runId, since: current }));
  state.when = `After the rebase onto ${request.target} at ${current.slice(0, 12)}`;
  return go('questions');
}
