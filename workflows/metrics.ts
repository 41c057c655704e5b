import { metricMeter } from '@temporalio/workflow';

/**
 * Tarmac's own metrics, emitted from workflow code through the SDK's metric meter: they
 * are exported with the worker's Prometheus metrics, and are not emitted again when a
 * workflow replays (so a worker restart does not count a landing twice).
 * Names get `_total` (counters) from the exporter.
 */
function createInstruments() {
  return {
    landings: metricMeter.createCounter('tarmac_landings_finished', 'landings', 'Landings that reached an outcome, by outcome'),
    phaseDuration: metricMeter.createHistogram('tarmac_phase_duration_ms', 'int', 'ms', 'Time a landing spent in each phase'),
    sessions: metricMeter.createCounter('tarmac_session_attempts', 'attempts', 'Agent session attempts, by class (delivered, crashed, oom…) and role'),
    reviewCache: metricMeter.createCounter('tarmac_review_cache', 'panels', 'Review panels by findings-cache status (hit, partial, miss)'),
    tokens: metricMeter.createCounter('tarmac_tokens', 'tokens', 'Tokens used by agent sessions, by direction and role'),
    gateCache: metricMeter.createCounter(
      'tarmac_gate_cache',
      'suites',
      'Gate suite results by gate-cache status (hit: reused by tree, no container; miss: the suite ran)',
    ),
    queueWait: metricMeter.createHistogram(
      'tarmac_queue_wait_ms',
      'int',
      'ms',
      'Time a landing waited in its target queue for one turn, by how the turn went (alone, batch)',
    ),
    batchResults: metricMeter.createCounter('tarmac_batch_results', 'landings', 'What speculative batches decided for their members (landed, culprit, retry)'),
  };
}

// Made on first use, not at import: the SDK's meter only works inside a workflow, and modules that
// import this one (the landing's tracker) are also loaded outside one by the unit tests of the phases.
let made: ReturnType<typeof createInstruments> | undefined;
const instruments = () => (made ??= createInstruments());

export const metrics = {
  landingFinished: (outcome: string) => instruments().landings.add(1, { outcome }),
  phaseEnded: (phase: string, durationMs: number) => instruments().phaseDuration.record(Math.max(0, Math.round(durationMs)), { phase }),
  sessionAttempt: (attemptClass: string, role: string) => instruments().sessions.add(1, { class: attemptClass, role }),
  reviewCache: (status: string) => instruments().reviewCache.add(1, { status }),
  gateCache: (status: string) => instruments().gateCache.add(1, { status }),
  queueWait: (durationMs: number, how: 'alone' | 'batch') => instruments().queueWait.record(Math.max(0, Math.round(durationMs)), { how }),
  batchResult: (kind: string) => instruments().batchResults.add(1, { result: kind }),
  tokens: (role: string, input: number, output: number) => {
    if (input > 0) instruments().tokens.add(input, { direction: 'input', role });
    if (output > 0) instruments().tokens.add(output, { direction: 'output', role });
  },
};
