import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import type { Activities } from '../../activities';
import type { RebaseResult } from '../../activities/git/rebase';
import type { GateFile } from '../../core/gate-file';
import type { LandingOutcome, LandingRequest } from '../../core/types';
import { initialState, type LandingContext, type LandingState, type Next, type Phase } from '../../workflows/landing/context';
import { merge, retarget } from '../../workflows/landing/merge';
import { questions } from '../../workflows/landing/questions';
import { rebase } from '../../workflows/landing/rebase';
import { LandingTracker, type TrackerEffects } from '../../workflows/landing/record';
import { verify } from '../../workflows/landing/verify';

/**
 * The landing's phases as plain functions of (context, state), run outside a workflow with stub
 * activities: each test gives the activities' answers and checks the phase's decision (the next
 * phase or the outcome) and what it handed on. Phases that start child workflows (gate suites,
 * review, fixup, a conflict's resolver) or wait on `condition` (queue, questions that ask) need the
 * workflow runtime: the e2e landing tests cover them.
 */

const sha = (digit: string) => digit.repeat(40);
const base = sha('b');
const moved = sha('m');
const request: LandingRequest = { repo: '/srv/repo.git', target: 'main', heads: [{ branch: 'feature/a', sha: sha('a') }] };
const gateFile: GateFile = { version: 1, suites: [{ id: 'test', run: ['make', 'test'] }] };
const head = { headSha: sha('h'), treeSha: sha('t'), commitsSince: 2 };

type Stubs = { [Name in keyof Activities]?: (input: Parameters<Activities[Name]>[0]) => Promise<Awaited<ReturnType<Activities[Name]>>> };

/** Activities whose answers the test gives; calls are recorded, and an activity the test gave no answer for fails the phase. */
function stubActivities(stubs: Stubs) {
  const calls: { name: string; input: any }[] = [];
  const activities = new Proxy({} as Activities, {
    get: (_target, name) => {
      if (typeof name !== 'string') return undefined;
      return async (input: unknown) => {
        calls.push({ name, input });
        const stub = stubs[name as keyof Activities] as ((input: unknown) => Promise<unknown>) | undefined;
        if (!stub) throw new Error(`the phase called ${name}, which this test gave no answer for`);
        return await stub(input);
      };
    },
  });
  return { activities, calls };
}

/** What an activity's failure looks like to the workflow: an ActivityFailure whose cause carries the type. */
const activityFailure = (activityType: string, type: string, message: string) =>
  new ActivityFailure(
    'Activity task failed',
    activityType,
    '1',
    RetryState.NON_RETRYABLE_FAILURE,
    'worker',
    ApplicationFailure.create({ type, message, nonRetryable: true }),
  );

function landingAt(options: { host?: Stubs; local?: Stubs; state?: Partial<LandingState> } = {}) {
  const announced = { phases: [] as string[], outcomes: [] as string[] };
  const effects: TrackerEffects = { phaseEntered: (phase) => announced.phases.push(phase), finished: (status) => announced.outcomes.push(status) };
  const tracker = new LandingTracker('land.test', request, effects);
  tracker.facts.targetSha = base;
  const host = stubActivities(options.host ?? {});
  const local = stubActivities(options.local ?? {});
  const ctx: LandingContext = {
    runId: 'land.test',
    taskQueue: 'tarmac',
    request,
    tracker,
    budgetControl: {},
    startedAt: Date.now(),
    gateFiles: { asked: 0 },
    local: local.activities,
    queue: { admitted: false },
  };
  const state: LandingState = { ...initialState(), hostId: 'host-a', host: host.activities, gate: gateFile, base, head, ...options.state };
  return { ctx, state, tracker, announced, hostCalls: host.calls, localCalls: local.calls };
}

const outcomeOf = (next: Next): LandingOutcome => {
  assert.ok('outcome' in next, `an outcome, not the next phase ${JSON.stringify(next)}`);
  return next.outcome;
};

const provenance = (original: string, how: 'identical' | 'dropped' = 'identical') => ({
  branch: 'feature/a',
  original,
  subject: `commit ${original.slice(0, 4)}`,
  rebased: how === 'dropped' ? null : sha('r'),
  how,
});

const rebased = (dropped: ReturnType<typeof provenance>[] = []): Extract<RebaseResult, { status: 'done' }> => ({
  status: 'done',
  ...head,
  changedFiles: ['a.txt'],
  gateFile: { changedPaths: ['a.txt'], targetBlob: sha('g'), headBlob: sha('g') },
  provenance: [provenance(sha('1')), ...dropped],
  dropped,
});

describe('rebase phase: the branches onto the target', () => {
  const table: { name: string; result: RebaseResult; declared?: string[]; next?: Phase; outcome?: { status: string; type: string } }[] = [
    { name: 'every original patch present → questions', result: rebased(), next: 'questions' },
    {
      name: 'a patch missing that nobody declared → dropped-commits, nothing merged',
      result: rebased([provenance(sha('2'), 'dropped')]),
      outcome: { status: 'dropped-commits', type: 'TARMAC_DROPPED_COMMITS' },
    },
    {
      name: 'a patch a resolver declared dropped (with its reason) → questions',
      result: rebased([provenance(sha('2'), 'dropped')]),
      declared: [sha('2')],
      next: 'questions',
    },
  ];
  for (const { name, result, declared = [], next, outcome } of table) {
    it(name, async () => {
      const landing = landingAt({
        host: { 'capsule.rebaseBranches': async () => result },
        state: { head: undefined, declaredDrops: new Map(declared.map((drop) => [drop, 'superseded upstream'])) },
      });
      const decided = await rebase(landing.ctx, landing.state);
      assert.deepEqual(
        landing.hostCalls.map((call) => [call.name, call.input.targetSha]),
        [['capsule.rebaseBranches', base]],
        'rebased onto the target it was placed on',
      );
      assert.deepEqual(landing.announced.phases, ['rebase']);
      if (next) {
        assert.deepEqual(decided, { next });
        assert.deepEqual(landing.state.head, head, 'the rebased head goes on');
        assert.equal(landing.tracker.facts.headSha, head.headSha);
      } else {
        const ended = outcomeOf(decided);
        assert.deepEqual({ status: ended.status, type: ended.failure?.type }, outcome);
        assert.match(ended.failure!.message, new RegExp(sha('2')), 'names the missing commit');
        assert.match(ended.summary, /nothing was merged/);
        assert.equal(ended.endedInPhase, 'rebase');
        assert.deepEqual(landing.announced.outcomes, [outcome!.status]);
      }
    });
  }

  it("validate's placement is the first rebase: taken once, without a second round trip", async () => {
    const landing = landingAt({ state: { head: undefined, placement: rebased() } });
    assert.deepEqual(await rebase(landing.ctx, landing.state), { next: 'questions' });
    assert.deepEqual(landing.hostCalls, []);
    assert.equal(landing.state.placement, undefined, 'a later rebase asks the capsule');
    assert.deepEqual(landing.state.head, head);
  });
});

// A conflict with the new target goes to a resolver (a child session): the e2e landing tests cover it.
describe('rebase phase after the target moved: the verified head onto the new target', () => {
  const clean: Stubs = {
    'capsule.rebaseOnto': async () => ({ status: 'done', headSha: sha('n') }),
    'capsule.checkPatches': async () => ({ provenance: [provenance(sha('1'))], dropped: [] }),
    'capsule.workspaceHead': async () => ({ headSha: sha('n'), treeSha: sha('u'), commitsSince: 2 }),
  };
  const table: { name: string; host: Stubs; outcome?: { status: string; type: string; mentions: RegExp } }[] = [
    { name: 'clean, every patch present → questions on the new base', host: clean },
    {
      name: 'a patch lost on the way → dropped-commits',
      host: { ...clean, 'capsule.checkPatches': async () => ({ provenance: [], dropped: [provenance(sha('1'), 'dropped')] }) },
      outcome: { status: 'dropped-commits', type: 'TARMAC_DROPPED_COMMITS', mentions: new RegExp(sha('1')) },
    },
  ];
  for (const { name, host, outcome } of table) {
    it(name, async () => {
      const landing = landingAt({ host, state: { moved: { to: moved }, round: 1 } });
      const decided = await rebase(landing.ctx, landing.state);
      assert.deepEqual(landing.hostCalls[0], { name: 'capsule.rebaseOnto', input: { runId: 'land.test', fromSha: base, ontoSha: moved } });
      if (!outcome) {
        assert.deepEqual(decided, { next: 'questions' });
        assert.equal(landing.state.base, moved, 'the merge now expects the new target');
        assert.equal(landing.tracker.facts.targetSha, moved);
        assert.deepEqual(landing.state.head, { headSha: sha('n'), treeSha: sha('u'), commitsSince: 2 });
        assert.match(landing.state.when, new RegExp(`onto main at ${moved.slice(0, 12)}`));
        return;
      }
      const ended = outcomeOf(decided);
      assert.deepEqual({ status: ended.status, type: ended.failure?.type }, { status: outcome.status, type: outcome.type });
      assert.match(ended.failure!.message, outcome.mentions);
      assert.equal(landing.state.base, base, 'the base is unchanged');
    });
  }
});

describe('verify phase: the exact head and target before the queue', () => {
  const markers = { ok: false, problems: ['leftover conflict markers: a.txt:2'], repairable: true };
  const table: {
    name: string;
    verdict: { ok: boolean; problems: string[]; repairable: boolean };
    state?: Partial<LandingState>;
    queue: LandingContext['queue'];
    next?: Phase;
    after?: string;
  }[] = [
    { name: 'verified, not queued yet → queue', verdict: { ok: true, problems: [], repairable: false }, queue: { admitted: false }, next: 'queue' },
    {
      name: 'verified after a moved target, already admitted → straight back to merge',
      verdict: { ok: true, problems: [], repairable: false },
      queue: { id: 'queue-main', admitted: true },
      next: 'merge',
    },
    {
      name: 'refused → verify-failed naming each problem; the queue is not asked',
      verdict: { ok: false, problems: ['gate not green on this tree', 'no commit over the target'], repairable: false },
      queue: { admitted: false },
    },
    { name: 'refused for what a fixer can mend → one fixup round with the refusal as its input', verdict: markers, queue: { admitted: false }, next: 'fixup' },
    {
      name: 'refused again after its fixup round → verify-failed',
      verdict: markers,
      state: { verifyFixups: 1 },
      queue: { admitted: false },
      after: ' after its fixup round',
    },
    {
      name: 'refused where the gate file allows no fixup → verify-failed',
      verdict: markers,
      state: { gate: { ...gateFile, fixup: { maxRounds: 0 } } },
      queue: { admitted: false },
    },
  ];
  for (const { name, verdict, state, queue, next, after } of table) {
    it(name, async () => {
      const landing = landingAt({ host: { 'capsule.verifyLanding': async () => verdict }, state: { approvedTree: sha('t'), ...state } });
      landing.ctx.queue = queue;
      const decided = await verify(landing.ctx, landing.state);
      const [verifyCall] = landing.hostCalls;
      assert.deepEqual(
        {
          targetSha: verifyCall!.input.targetSha,
          headSha: verifyCall!.input.headSha,
          suiteIds: verifyCall!.input.suiteIds,
          reviewed: 'reviewedTreeSha' in verifyCall!.input,
        },
        { targetSha: base, headSha: head.headSha, suiteIds: ['test'], reviewed: false },
        'verified on the exact target and head; no review asked of a gate file without one',
      );
      assert.equal(landing.localCalls.length, 0, 'verify asks no queue');
      if (next) {
        assert.deepEqual(decided, { next });
        if (next === 'fixup')
          assert.deepEqual(landing.state.repair, {
            kind: 'verify',
            problems: verdict.problems.join('; '),
            problem: `verification refused the merge: ${verdict.problems.join('; ')}`,
          });
        return;
      }
      const ended = outcomeOf(decided);
      assert.deepEqual(
        { status: ended.status, type: ended.failure?.type, message: ended.failure?.message },
        { status: 'verify-failed', type: 'TARMAC_VERIFY_FAILED', message: verdict.problems.join('; ') },
      );
      assert.equal(ended.summary, `verification refused the merge${after ?? ''}: ${verdict.problems.join('; ')}; nothing was merged`);
    });
  }

  it('a gate file with a review panel: the approved tree goes to verification', async () => {
    const landing = landingAt({
      host: { 'capsule.verifyLanding': async () => ({ ok: true, problems: [], repairable: false }) },
      state: { gate: { ...gateFile, review: { panel: 'default', quorum: 2 } }, approvedTree: sha('t') },
    });
    await verify(landing.ctx, landing.state);
    assert.equal(landing.hostCalls[0]!.input.reviewedTreeSha, sha('t'));
  });
});

describe('merge phase: fast-forward exactly the verified head', () => {
  it('landed: the target at the head, the merged SHA recorded', async () => {
    const landing = landingAt({ host: { 'capsule.fastForwardTarget': async () => ({ mergedSha: head.headSha, alreadyMerged: false }) } });
    const ended = outcomeOf(await merge(landing.ctx, landing.state));
    assert.equal(ended.status, 'landed');
    assert.equal(ended.mergedSha, head.headSha);
    assert.match(ended.summary, /main fast-forwarded to h{12} \(2 commit\(s\), all 1 suite\(s\) green/);
    assert.deepEqual(landing.hostCalls[0]!.input, { runId: 'land.test', repo: request.repo, target: 'main', expectedTargetSha: base, headSha: head.headSha });
  });

  const movedUnder: Stubs = {
    'capsule.fastForwardTarget': async () =>
      Promise.reject(activityFailure('capsule.fastForwardTarget', 'TARMAC_TARGET_MOVED', 'main moved from bbbb to mmmm')),
  };
  it('the target moved under it → retarget (and back through rebase)', async () => {
    const landing = landingAt({ host: movedUnder });
    assert.deepEqual(await merge(landing.ctx, landing.state), { next: 'retarget' });
    assert.equal(landing.state.mergeTries, 1);
  });

  it('the target keeps moving → target-moved after the fifth try, nothing merged', async () => {
    const landing = landingAt({ host: movedUnder, state: { mergeTries: 4 } });
    const ended = outcomeOf(await merge(landing.ctx, landing.state));
    assert.deepEqual({ status: ended.status, type: ended.failure?.type }, { status: 'target-moved', type: 'TARMAC_TARGET_MOVED' });
    assert.match(ended.summary, /gave up after 5 tries; nothing was merged/);
  });

  it('any other failure is not a moved target: it ends the loop (the landing records it as failed)', async () => {
    const landing = landingAt({
      host: { 'capsule.fastForwardTarget': async () => Promise.reject(activityFailure('capsule.fastForwardTarget', 'TARMAC_PUSH_REJECTED', 'remote refused')) },
    });
    await assert.rejects(merge(landing.ctx, landing.state), ActivityFailure);
  });
});

describe('retarget phase: the new target head and the gate file it declares', () => {
  it('→ rebase onto the new head, with its gate file', async () => {
    const newGate: GateFile = {
      version: 1,
      suites: [
        { id: 'lint', run: ['make', 'lint'] },
        { id: 'test', run: ['make', 'test'] },
      ],
    };
    const landing = landingAt({
      host: { 'capsule.currentTarget': async () => moved, 'capsule.readGateFile': async () => ({ gate: { ok: true, gate: newGate }, blob: sha('g') }) },
    });
    assert.deepEqual(await retarget(landing.ctx, landing.state), { next: 'rebase' });
    assert.deepEqual(landing.state.moved, { to: moved });
    assert.deepEqual(landing.state.gate, newGate, 'the re-gate runs what the target declares now');
    assert.equal(landing.hostCalls[1]!.input.sha, moved);
  });

  it('the new target has an invalid gate file → invalid-gate-file naming the field, nothing merged', async () => {
    const landing = landingAt({
      host: {
        'capsule.currentTarget': async () => moved,
        'capsule.readGateFile': async () => ({ gate: { ok: false, field: 'suites[0].run', message: 'must be an array' }, blob: sha('g') }),
      },
    });
    const ended = outcomeOf(await retarget(landing.ctx, landing.state));
    assert.deepEqual(
      { status: ended.status, type: ended.failure?.type, field: ended.failure?.field },
      { status: 'invalid-gate-file', type: 'TARMAC_INVALID_GATE_FILE', field: 'suites[0].run' },
    );
    assert.match(ended.summary, /read after main moved to m{12}\); nothing was merged/);
  });
});

describe('questions phase: a head that leaves the gate file alone goes to the gate', () => {
  const unchanged = { changedPaths: ['a.txt'], targetBlob: sha('g'), headBlob: sha('g') };
  it('facts read by the rebase for this exact base and head: no second read', async () => {
    const landing = landingAt({ state: { headFacts: { base, headSha: head.headSha, facts: unchanged } } });
    assert.deepEqual(await questions(landing.ctx, landing.state), { next: 'gate' });
    assert.deepEqual(landing.hostCalls, []);
    assert.deepEqual(landing.announced.phases, ['questions'], 'shown on the first pass');
  });

  it('a head the facts were not read for (after a fixup round): read, then the gate', async () => {
    const landing = landingAt({
      host: { 'capsule.gateFileFacts': async () => unchanged },
      state: { round: 1, headFacts: { base, headSha: sha('o'), facts: unchanged } },
    });
    assert.deepEqual(await questions(landing.ctx, landing.state), { next: 'gate' });
    assert.deepEqual(
      landing.hostCalls.map((call) => call.input),
      [{ runId: 'land.test', targetSha: base, headSha: head.headSha }],
    );
    assert.deepEqual(landing.announced.phases, [], 'later passes enter the phase only when they ask');
  });
});

describe('a target that moved under the merge is a transition back to rebase, not a second pipeline', () => {
  it('merge → retarget → rebase (onto the new head) → questions → gate, on the new base', async () => {
    const phases = { merge, retarget, rebase, questions } as const;
    let tries = 0;
    const landing = landingAt({
      state: { round: 1, mergeTries: 0 },
      host: {
        'capsule.fastForwardTarget': async () => {
          tries += 1;
          throw activityFailure('capsule.fastForwardTarget', 'TARMAC_TARGET_MOVED', 'main moved');
        },
        'capsule.currentTarget': async () => moved,
        'capsule.readGateFile': async () => ({ gate: { ok: true, gate: gateFile }, blob: sha('g') }),
        'capsule.rebaseOnto': async () => ({ status: 'done', headSha: sha('n') }),
        'capsule.checkPatches': async () => ({ provenance: [provenance(sha('1'))], dropped: [] }),
        'capsule.workspaceHead': async () => ({ headSha: sha('n'), treeSha: sha('u'), commitsSince: 2 }),
        'capsule.gateFileFacts': async () => ({ changedPaths: ['a.txt'], targetBlob: sha('g'), headBlob: sha('g') }),
      },
    });
    const path: string[] = [];
    let next: Phase = 'merge';
    while (next in phases) {
      path.push(next);
      const decided: Next = await phases[next as keyof typeof phases](landing.ctx, landing.state);
      assert.ok('next' in decided, `no outcome on the way: ${JSON.stringify(decided)}`);
      next = decided.next;
    }
    assert.deepEqual([...path, next], ['merge', 'retarget', 'rebase', 'questions', 'gate']);
    assert.equal(tries, 1);
    assert.equal(landing.state.base, moved);
    assert.equal(landing.state.head?.headSha, sha('n'));
    assert.deepEqual(
      landing.hostCalls.map((call) => call.name),
      [
        'capsule.fastForwardTarget',
        'capsule.currentTarget',
        'capsule.readGateFile',
        'capsule.rebaseOnto',
        'capsule.checkPatches',
        'capsule.workspaceHead',
        'capsule.gateFileFacts',
      ],
    );
    assert.equal(landing.hostCalls.at(-1)!.input.targetSha, moved, 'the gate-file question is asked against the new target');
  });
});
