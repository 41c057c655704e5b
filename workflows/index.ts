/** The workflow bundle's entry: every workflow type the worker registers. */
export { landing } from './landing/landing';
export { agentSession } from './agent-session';
export { targetQueue } from './target-queue';
export { mergeBatch } from './merge-batch';
export { reviewPanel } from './review-panel';
export { fixLoop } from './fix-loop';
export { nightly } from './nightly';
export { agentRegistry } from './agent-registry';
export { retentionSweep } from './retention';
export { suiteQuarantine } from './suite-quarantine';
