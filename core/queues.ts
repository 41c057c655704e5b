/** Task queue names. Pure: imported by workflow code. */

/** Default shared queue: workflows and capsules any worker can run. */
export const defaultTaskQueue = 'tarmac';

/**
 * The host-affine queue of one worker host: activities that touch that host's
 * worktrees or Docker daemon. A landing pins itself to the host that prepared it.
 */
export function hostQueue(hostId: string): string {
  return `tarmac.host.${hostId}`;
}

/**
 * Where a run is placed on a host (the worker that takes the step becomes the run's host): served
 * by every worker that serves its own host queue, and by no other, so no run is ever pinned to a
 * host whose queue nobody polls (a workflow-only worker, `TARMAC_WORKER_QUEUES=shared`, places
 * nothing on itself). Named after the shared queue it belongs to.
 */
export function placementQueue(sharedQueue: string): string {
  return `${sharedQueue}.placement`;
}
