import type { RebaseResult } from '../../activities';
import { FailureCode } from '../../core/failures';
import type { ConversationRef, SessionOutcome } from '../../core/session-types';
import type { LandingOutcome } from '../../core/types';
import { end, go, setHead, type LandingContext, type LandingState, type Next } from './context';
import { answerAgent, session } from './steps';

/** Resolver sessions one landing may start before it gives up on a conflict (follow-ups with answers included). */
const maxResolverSessions = 5;

type Conflict = Extract<RebaseResult, { status: 'conflict' }>;

/**
 * rebase: the branches onto the target — or, after the target moved under the merge, the
 * verified head onto the target's new head. Either way a conflict goes to a resolver agent (its
 * questions answered first), every original commit's patch must be present, and the head goes on
 * to the questions and the gate.
 */
export async function rebase(ctx: LandingContext, state: LandingState): Promise<Next> {
  ctx.tracker.enter('rebase');
  return state.moved ? await rebaseOntoMoved(ctx, state, state.moved.to) : await rebaseBranches(ctx, state);
}

async function rebaseBranches(ctx: LandingContext, state: LandingState): Promise<Next> {
  const { runId, request, tracker } = ctx;
  const host = state.host!;
  const rebased = await untilResolved(ctx, state, `onto ${request.target}`, (resolvedHead) => {
    // validate's placement made the first rebase: taken once, without a second round trip.
    const placed = state.placement;
    state.placement = undefined;
    if (placed) return Promise.resolve(placed);
    return tracker.step(
      'capsule.rebaseBranches',
      'capsule',
      () => host['capsule.rebaseBranches']({ runId, targetSha: state.base, heads: request.heads, ...(resolvedHead ? { resolvedHead } : {}) }),
      (value) =>
        value.status === 'done'
          ? `at ${value.headSha.slice(0, 12)}; ${value.provenance.length} original commit(s), ${value.dropped.length} missing`
          : `conflict in ${value.files.join(', ')} at ${value.commit.slice(0, 12)}`,
    );
  });
  if ('outcome' in rebased) return rebased;
  tracker.facts.provenance = rebased.provenance;
  const dropped = rebased.dropped.filter((entry) => !state.declaredDrops.has(entry.original));
  if (dropped.length > 0) {
    return end(
      tracker.fail(
        FailureCode.droppedCommits,
        `the rebased result is missing ${dropped.length} commit(s): ${dropped.map((entry) => `${entry.original.slice(0, 12)} "${entry.subject}" (${entry.branch})`).join(', ')}; nothing was merged`,
        {
          message: dropped.map((entry) => entry.original).join(', '),
        },
      ),
    );
  }
  setHead(ctx, state, { headSha: rebased.headSha, treeSha: rebased.treeSha, commitsSince: rebased.commitsSince });
  state.headFacts = { base: state.base, headSha: rebased.headSha, facts: rebased.gateFile };
  state.when = 'After the rebase';
  return go('questions');
}

/** The target moved while the landing waited: the verified head onto the new target (a conflict to the resolver), its patches checked again. */
async function rebaseOntoMoved(ctx: LandingContext, state: LandingState, current: string): Promise<Next> {
  const { runId, request, tracker } = ctx;
  const host = state.host!;
  const moved = await untilResolved(ctx, state, `onto ${request.target}, which moved to ${current.slice(0, 12)}`, (resolvedHead) =>
    tracker.step('capsule.rebaseOnto', 'capsule', () =>
      host['capsule.rebaseOnto']({ runId, fromSha: state.base, ontoSha: current, ...(resolvedHead ? { resolvedHead } : {}) }),
    ),
  );
  if ('outcome' in moved) return moved;
  const recheck = await tracker.step('capsule.checkPatches', 'capsule', () =>
    host['capsule.checkPatches']({ runId, targetSha: current, heads: request.heads }),
  );
  const lost = recheck.dropped.filter((entry) => !state.declaredDrops.has(entry.original));
  if (lost.length > 0) {
    return end(
      tracker.fail(
        FailureCode.droppedCommits,
        `rebasing onto the moved target lost ${lost.map((entry) => `"${entry.subject}"`).join(', ')}; nothing was merged`,
        {
          message: lost.map((entry) => entry.original).join(', '),
        },
      ),
    );
  }
  tracker.facts.provenance = recheck.provenance;
  state.base = current;
  tracker.facts.targetSha = current;
  setHead(ctx, state, await host['capsule.workspaceHead']({ runId, since: current }));
  state.when = `After the rebase onto ${request.target} at ${current.slice(0, 12)}`;
  return go('questions');
}

/**
 * Runs `step` until it is done: each conflict it stops at goes to a resolver session, whose
 * delivered head the next call takes. An agent that asks is answered first (questions first) and a
 * follow-up in its conversation carries the answers. Ends the landing when no resolver can run, an
 * answer declines, or the conflict outlasts the resolver sessions a landing may start.
 */
async function untilResolved<Done extends { status: 'done' }>(
  ctx: LandingContext,
  state: LandingState,
  onto: string,
  step: (resolvedHead?: string) => Promise<Done | Conflict>,
): Promise<Done | { outcome: LandingOutcome }> {
  const resolvers = { started: 0 };
  let resolvedHead: string | undefined;
  for (;;) {
    const rebased = await step(resolvedHead);
    if (rebased.status === 'done') return rebased;
    const session = await resolveConflict(ctx, state, rebased, onto, resolvers);
    if ('outcome' in session) return session;
    const { resolved } = session;
    for (const drop of resolved.result?.droppedCommits ?? []) state.declaredDrops.set(drop.sha, drop.reason);
    resolvedHead = resolved.status === 'delivered' ? resolved.headSha : undefined;
  }
}

/**
 * One conflict to a resolver session (counted in `resolvers`, across the landing's conflicts); an
 * agent that asks is answered and followed up in its conversation until it ends another way.
 */
async function resolveConflict(
  ctx: LandingContext,
  state: LandingState,
  rebased: Conflict,
  onto: string,
  resolvers: { started: number },
): Promise<{ resolved: SessionOutcome } | { outcome: LandingOutcome }> {
  const { tracker } = ctx;
  const what = `rebase of ${rebased.branch} ${onto}`;
  const prompt = resolverPrompt(rebased, onto);
  let followUp: { continues?: ConversationRef; message: string } | undefined;
  let resolved: SessionOutcome;
  do {
    if (resolvers.started >= maxResolverSessions) {
      return {
        outcome: tracker.fail(
          FailureCode.conflictUnresolved,
          `${what} still conflicts at ${rebased.commit.slice(0, 12)} "${rebased.subject}" after ${resolvers.started} resolver session(s); nothing was merged`,
          {
            message: `conflicted files: ${rebased.files.join(', ')}`,
          },
        ),
      };
    }
    resolvers.started += 1;
    resolved = await session(
      ctx,
      'resolver',
      `resolver-${resolvers.started}`,
      rebased.baseSha,
      state.hostId,
      { prompt: followUp ? `${followUp.message}\n\n${prompt}` : prompt, files: rebased.files },
      followUp?.continues,
    );
    // No resolver can run here: say so now, naming what is missing, instead of trying again.
    if (resolved.status === 'agent-unavailable') {
      return {
        outcome: tracker.fail(
          FailureCode.agentUnavailable,
          `${what} conflicts in ${rebased.files.join(', ')} and no resolver could start: ${resolved.summary}; nothing was merged`,
          {
            message: resolved.failure?.message ?? resolved.summary,
          },
        ),
      };
    }
    if (resolved.status === 'asked') {
      const answered = await answerAgent(ctx, resolved, `the ${what} stopped at a conflict in ${rebased.files.join(', ')}`);
      if ('stopped' in answered) return { outcome: answered.stopped };
      followUp = answered.followUp;
    }
  } while (resolved.status === 'asked');
  return { resolved };
}

/** What a resolver is asked to do about a conflict. */
function resolverPrompt(rebased: Conflict, onto: string): string {
  return [
    `A rebase of branch ${rebased.branch} ${onto} stopped at commit ${rebased.commit} "${rebased.subject}".`,
    `Conflicted files: ${rebased.files.join(', ')}.`,
    'Resolve each conflict keeping the intent of both sides, stage the files and run `GIT_EDITOR=true git rebase --continue`;',
    'repeat while the rebase stops again. Never drop a commit silently: list any you must drop in droppedCommits with a reason.',
  ].join('\n');
}
