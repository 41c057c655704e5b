import type { Client } from '@temporalio/client';
import { landingStatusQuery } from '../../core/messages';
import { searchAttributes } from '../../core/search-attributes';
import type { LandingOutcome, LandingStatusView } from '../../core/types';
import type { LandingView } from '../schemas';

/** The landing's time in its target queue, from its memo (landings that queued before it was recorded have none). */
export function queuedFor(memo: Record<string, unknown> | undefined): { queuedMs?: number } {
  const value = memo?.queuedMs;
  return typeof value === 'number' && Number.isFinite(value) ? { queuedMs: Math.round(value) } : {};
}

/**
 * GET /v1/landings/:id: the landing's status query, with its outcome once it has one. A closed
 * workflow answers queries only while a worker can replay it; the outcome suffices. A running one
 * with no worker to answer (all down, or its host lost) still has its phase in visibility: the view
 * says so rather than fail. An id Temporal does not know throws its WorkflowNotFoundError (a 404).
 */
export async function landingView(client: Client, id: string): Promise<LandingView> {
  const handle = client.workflow.getHandle(id);
  const described = await handle.describe();
  const workflowStatus = described.status.name;
  let view: LandingStatusView | undefined;
  let unanswered: string | undefined;
  try {
    view = await handle.query(landingStatusQuery);
  } catch (error) {
    if (workflowStatus === 'RUNNING')
      unanswered = `no worker answered the status query (${error instanceof Error ? error.message : String(error)}); the phase is the last one recorded in visibility`;
  }
  let outcome: LandingOutcome | undefined = view?.outcome;
  if (!outcome && workflowStatus === 'COMPLETED') outcome = (await handle.result()) as LandingOutcome;
  return {
    id,
    workflowStatus,
    phase: view?.phase ?? outcome?.endedInPhase ?? described.typedSearchAttributes.get(searchAttributes.phase) ?? 'unknown',
    ...(unanswered ? { statusUnavailable: unanswered } : {}),
    steps: view?.steps ?? [],
    gates: view?.gates ?? outcome?.gates ?? [],
    meters: { ...(view?.meters ?? outcome?.meters ?? {}) },
    pendingQuestions: view?.pendingQuestions ?? [],
    ...(view?.budget ? { budget: { ...view.budget } } : {}),
    ...(view?.pausedFor ? { pausedFor: view.pausedFor } : {}),
    reviews: (view?.reviews ?? outcome?.reviews ?? []).map((review) => ({ ...review })),
    ...(outcome ? { outcome: { ...outcome } } : {}),
  };
}
