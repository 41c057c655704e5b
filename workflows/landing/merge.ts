import { getExternalWorkflowHandle } from '@temporalio/workflow';
import { FailureCode } from '../../core/failures';
import { releaseSignal } from '../../core/messages';
import { end, go, placed, type LandingContext, type LandingState, type Next } from './context';
import { causeOf } from '../run-record';
import { invalidEnvironment, invalidGateFile } from './steps';
import { batchTicket } from './verify';
import { excusedText } from './flake';

/** Tries of a merge whose target keeps moving before the landing gives up. */
const maxMergeTries = 5;

/**
 * merge: fast-forward the target to exactly the verified head, from exactly the target it was
 * verified on. A target that moved meanwhile → retarget (and back through rebase, questions, gate,
 * review and verify); landed otherwise.
 */
export async function merge(ctx: LandingContext, state: LandingState): Promise<Next> {
  const { runId, request, tracker } = ctx;
  const { host, gate: gateFile, head } = placed(state);
  tracker.enter('merge');
  state.mergeTries += 1;
  try {
    const merged = await tracker.step('capsule.fastForwardTarget', 'capsule', () =>
      host['capsule.fastForwardTarget']({ runId, repo: request.repo, target: request.target, expectedTargetSha: state.base, headSha: head.headSha }),
    );
    tracker.facts.mergedSha = merged.mergedSha;
  } catch (error) {
    const failure = causeOf(error);
    if (failure.type !== FailureCode.targetMoved) throw error;
    if (state.mergeTries >= maxMergeTries)
      return end(
        tracker.fail(FailureCode.targetMoved, `${failure.message}; gave up after ${state.mergeTries} tries; nothing was merged`, { message: failure.message }),
      );
    if (batchTicket(ctx, state) && ctx.queue.id) return await requeue(ctx, failure.message);
    return go('retarget');
  }
  const lineage = state.verdict?.lineage ?? [];
  const superseded = lineage.length ? `; ${lineage.length} red result(s) superseded by the re-gate` : '';
  // Reds the evidence excused (flake.ts) are named: the tree did not pass them all.
  const excused = excusedText(state.verdict);
  const suites = gateFile.suites.length;
  const green = excused.length === 0 ? `all ${suites} suite(s) green` : `${suites - excused.length} of ${suites} suite(s) green, ${excused.join(', ')},`;
  return end(
    tracker.finish(
      'landed',
      `${request.target} fast-forwarded to ${head.headSha.slice(0, 12)} (${head.commitsSince} commit(s), ${green} on tree ${head.treeSha.slice(0, 12)}${superseded})`,
    ),
  );
}

/**
 * A batchable landing whose merge found the target moved gives the target back and waits for the
 * next batch, which restacks it on the target with whoever else waits (one gate round for all),
 * instead of re-gating alone while the others wait behind it.
 */
async function requeue(ctx: LandingContext, why: string): Promise<Next> {
  const { runId, tracker, queue } = ctx;
  tracker.journal.record({ kind: 'step', name: 'queue.requeue', status: 'done', detail: `${why}; back to the queue for the next batch` });
  await getExternalWorkflowHandle(queue.id!).signal(releaseSignal, { landingId: runId });
  queue.id = undefined;
  queue.admitted = false;
  queue.moved = true;
  return go('queue');
}

/**
 * retarget: the target moved while the landing waited (a push outside the queue, or an earlier
 * landing). Its new head and the gate file it declares now (which the re-gate runs) → rebase onto it.
 */
export async function retarget(ctx: LandingContext, state: LandingState): Promise<Next> {
  const { request, tracker } = ctx;
  const host = state.host!;
  const current = await tracker.step('capsule.currentTarget', 'capsule', () => host['capsule.currentTarget']({ repo: request.repo, target: request.target }));
  const reread = await tracker.step(
    'capsule.readGateFile',
    'capsule',
    () => host['capsule.readGateFile']({ repo: request.repo, sha: current }),
    (value) => (value.gate.ok ? `${value.gate.gate.suites.length} suite(s) at ${current.slice(0, 12)}` : `invalid at ${current.slice(0, 12)}`),
  );
  if (reread.environment && !reread.environment.ok) return end(invalidEnvironment(ctx, reread.environment));
  if (!reread.gate.ok) return end(invalidGateFile(ctx, reread.gate, ` (read after ${request.target} moved to ${current.slice(0, 12)}); nothing was merged`));
  state.gate = reread.gate.gate;
  // The environment as the moved target declares it (absent in answers of workers before environments: as it was).
  if (reread.environment) state.environment = reread.environment.declaration;
  state.moved = { to: current };
  return go('rebase');
}
