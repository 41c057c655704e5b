import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  liftQuarantineUpdate,
  quarantinesQuery,
  quarantineUpdate,
  type Quarantine,
  type QuarantineRequest,
  type SuiteQuarantineInput,
} from '../core/quarantine';
import { activeQuarantines, addQuarantine } from '../policies/flake';

/** Changes (quarantines and lifts) per run before the entity continues as new (keeps its history small). */
const changesPerRun = 200;

/**
 * suiteQuarantine(repo, target): an entity workflow (update-with-start, like the target queue) that
 * holds the suites quarantined on one target. A landing whose suite the evidence settled as flaky or
 * pre-existing, with a recipe that says `quarantine`, adds it (the `quarantine` update); while it is in
 * force that suite's red blocks no landing on the target. The entity wakes when the next quarantine
 * ends and drops it; an operator lifts one early (`lift`). With nothing in force it ends: the next
 * quarantine starts it again. `quarantines` (a query) lists what is in force.
 *
 *   start ─→ wait (until the next end, or a change) ─→ drop the ended ─→ none left → end
 *                ↑______________________________________|  some left
 */
export async function suiteQuarantine(input: SuiteQuarantineInput): Promise<void> {
  let entries: Quarantine[] = [...input.entries];
  let changes = 0;
  let changed = false;
  const inForce = () => activeQuarantines(entries, Date.now());
  setHandler(
    quarantineUpdate,
    ({ suiteId, forMs, settled, landingId, treeSha, logRefs }) => {
      const now = Date.now();
      entries = addQuarantine(inForce(), {
        suiteId,
        since: new Date(now).toISOString(),
        until: new Date(now + forMs).toISOString(),
        settled,
        landingId,
        treeSha,
        logRefs: [...logRefs],
      });
      changes += 1;
      changed = true;
      return entries.find((entry) => entry.suiteId === suiteId)!;
    },
    {
      validator: (asked: QuarantineRequest) => {
        // Whatever a client sent: checked before the update is accepted (a refusal records nothing).
        const request = asked as Partial<QuarantineRequest> | undefined;
        if (typeof request?.suiteId !== 'string' || request.suiteId.length === 0) throw new Error('suiteId: must be a suite id');
        if (typeof request.forMs !== 'number' || !(request.forMs >= 1000)) throw new Error('forMs: a quarantine lasts at least 1000 ms');
        if (request.settled !== 'flaky' && request.settled !== 'pre-existing') throw new Error('settled: must be "flaky" or "pre-existing"');
      },
    },
  );
  setHandler(liftQuarantineUpdate, ({ suiteId }) => {
    const before = inForce();
    entries = before.filter((entry) => entry.suiteId !== suiteId);
    changes += 1;
    changed = true;
    return { lifted: entries.length < before.length };
  });
  setHandler(quarantinesQuery, () => inForce());

  for (;;) {
    entries = inForce();
    if (entries.length === 0) {
      // Nothing in force: end (after any update still being answered); a change that came meanwhile goes round again.
      await condition(allHandlersFinished);
      if (inForce().length === 0) return;
      continue;
    }
    if (changes >= changesPerRun || workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof suiteQuarantine>({ ...input, entries: inForce() });
    }
    const nextEnd = Math.min(...entries.map((entry) => Date.parse(entry.until)));
    changed = false;
    await condition(() => changed, Math.max(1, nextEnd - Date.now()));
  }
}
