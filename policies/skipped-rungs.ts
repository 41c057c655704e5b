import type { SessionOutcome } from '../core/session-types';

/** One rung a session passed over: the step a run shows for it. */
interface SkippedRung {
  name: string;
  detail: string;
}

/**
 * The rungs of a session's ladder that could not run on its worker (no image, no key), one step
 * each: named after the session's step and the rung, saying what was missing and which rung the
 * session moved to (or that none was left). No container was started for any of them. Pure.
 */
export function skippedRungs(stepName: string, outcome: Pick<SessionOutcome, 'attempts' | 'decisions'>): SkippedRung[] {
  return outcome.attempts
    .filter((attempt) => attempt.class === 'agent-unavailable')
    .map((attempt) => {
      const decision = outcome.decisions.find((entry) => entry.afterAttempt === attempt.attempt);
      const next = decision?.action === 'escalate' && decision.harnessModel ? `moved to ${decision.harnessModel}` : 'no rung of the ladder left';
      return {
        name: `${stepName} skipped ${attempt.harnessModel}`,
        detail: `${attempt.unavailable ?? `${attempt.harnessModel} cannot run here`}; no container was started; ${next}`,
      };
    });
}
