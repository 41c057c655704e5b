/** The workflow bundle's entry: every workflow type the worker registers. */
export { landing } from './landing/landing';
export { agentSession } from './agent-session/agent-session';
export { targetQueue } from './target-queue/target-queue';
export { mergeBatch } from './merge-batch/merge-batch';
export { reviewPanel } from './review-panel/review-panel';
export { fixLoop } from './fix-loop/fix-loop';
export { nightly } from './nightly/nightly';
export { agentRegistry } from './agent-registry';
export { retentionSweep } from './retention';
export { suiteQuarantine } from './suite-quarantine';
