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
