/**
 * Capsules that work in one host's mirror, run workspace or Docker daemon, take about a second,
 * and may run twice: a pinned run tries them as local activities first (workflows/pinned.ts),
 * through `capsule.onHost`, which refuses on any other host. Local activities' results are
 * recorded only when the workflow task completes, so a lost task (a worker that dies, or one too
 * slow for the task timeout) runs them again: only steps that read, or that converge when
 * repeated (prepare, resumable rebase, an idempotent merge), are here. Steps that destroy what an
 * earlier step reads (cleanup) or that must not be repeated (rebasing onto a moved target) always
 * go through the host's task queue, whose results are recorded one by one.
 */
export const hostBoundCapsules = [
  'capsule.prepareRun',
  'capsule.rebaseBranches',
  'capsule.checkPatches',
  'capsule.workspaceHead',
  'capsule.treeOf',
  'capsule.changedFiles',
  'capsule.gateFileFacts',
  'capsule.readGateFile',
  'capsule.diffFacts',
  'capsule.verifyLanding',
  'capsule.fastForwardTarget',
  'capsule.currentTarget',
  'capsule.recordOutcome',
  // Frees the target, stores the outcome, marks the run for its host's janitor: each part converges.
  'capsule.finishRun',
] as const;

export type HostBoundCapsule = (typeof hostBoundCapsules)[number];
