import { metricMeter } from '@temporalio/workflow';

/**
 * Tarmac's own metrics, emitted from workflow code through the SDK's metric meter: they
 * are exported with the worker's Prometheus metrics, and are not emitted again when a
 * workflow replays (so a worker restart does not count a landing twice).
 * Names get `_total` (counters) from the exporter.
 */
const landings = metricMeter.createCounter('tarmac_landings_finished', 'landings', 'Landings that reached an outcome, by outcome');
const phaseDuration = metricMeter.createHistogram('tarmac_phase_duration_ms', 'int', 'ms', 'Time a landing spent in each phase');
const sessions = metricMeter.createCounter('tarmac_session_attempts', 'attempts', 'Agent session attempts, by class (delivered, crashed, oom…) and role');
const reviewCache = metricMeter.createCounter('tarmac_review_cache', 'panels', 'Review panels by findings-cache status (hit, partial, miss)');
const tokens = metricMeter.createCounter('tarmac_tokens', 'tokens', 'Tokens used by agent sessions, by direction and role');

export const metrics = {
  landingFinished: (outcome: string) => landings.add(1, { outcome }),
  phaseEnded: (phase: string, durationMs: number) => phaseDuration.record(Math.max(0, Math.round(durationMs)), { phase }),
  sessionAttempt: (attemptClass: string, role: string) => sessions.add(1, { class: attemptClass, role }),
  reviewCache: (status: string) => reviewCache.add(1, { status }),
  tokens: (role: string, input: number, output: number) => {
    if (input > 0) tokens.add(input, { direction: 'input', role });
    if (output > 0) tokens.add(output, { direction: 'output', role });
  },
};
