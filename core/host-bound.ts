/**
 * Capsules that work in one host's mirror, run workspace or Docker daemon and take about a
 * second: a pinned run tries them as local activities first (workflows/pinned.ts), through
 * `capsule.onHost`, which refuses on any other host.
 */
export const hostBoundCapsules = [
  'capsule.prepareRun',
  'capsule.rebaseBranches',
  'capsule.checkPatches',
  'capsule.rebaseOnto',
  'capsule.workspaceHead',
  'capsule.changedFiles',
  'capsule.gateFileFacts',
  'capsule.readGateFile',
  'capsule.diffFacts',
  'capsule.verifyLanding',
  'capsule.fastForwardTarget',
  'capsule.currentTarget',
  'capsule.cleanupRun',
  'capsule.recordOutcome',
] as const;

export type HostBoundCapsule = (typeof hostBoundCapsules)[number];
