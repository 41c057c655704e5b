import { CancellationScope, condition, getExternalWorkflowHandle, isCancellation, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { parseDuration } from '../core/duration';
import { FailureType } from '../core/errors';
import type { FixOutcome } from '../core/fix-types';
import type { BudgetCommand, ConversationRef, SessionOutcome } from '../core/session-types';
import { hostQueue } from '../core/queues';
import type { LandingOutcome, LandingRequest } from '../core/types';
import { capsule } from './activity-options';
import { landingSteps } from './landing-steps';
import { LandingTracker } from './landing-tracker';
import { budgetCommandProblem } from '../policies/budget';
import { admittedSignal, answerUpdate, budgetUpdate, eventsQuery, landingStatusQuery, releaseSignal, runEventSignal } from '../core/messages';

/** The failure type and message of an activity failure, read from its cause. */
function failureOf(error: unknown): { type?: string; message: string } {
  const cause = (error as { cause?: { type?: string; message?: string } }).cause;
  const message = cause?.message ?? (error instanceof Error ? error.message : String(error));
  return { ...(cause?.type ? { type: cause.type } : {}), message };
}

/** Resolver sessions one landing may start before it gives up on a conflict. */
const maxResolverSessions = 5;

/**
 * landing: validate → prepare → rebase (resolver on conflict, patch check) →
 * questions → gate → fixup (re-gate; green supersedes red) → verify → merge →
 * cleanup → outcome. Every exit path, cancellation included, returns and records
 * an outcome.
 */
export async function landing(request: LandingRequest): Promise<LandingOutcome> {
  const { workflowId: runId, taskQueue } = workflowInfo();
  const tracker = new LandingTracker(runId, request);
  const budgetControl: { pending?: BudgetCommand } = {};
  if (request.budget) {
    const { tokens, costUsd, sessions, wall, onExhausted } = request.budget;
    tracker.budget = { tokens, costUsd, sessions, wallMs: parseDuration(wall) ?? 8 * 3_600_000, onExhausted };
  }
  const { session, runGate, reviewTree, fixRedGate, redSummary, checkGateFile, invalidGateFile, gateFileApproval } = landingSteps({ runId, taskQueue, request, tracker, budgetControl });
  setHandler(landingStatusQuery, () => tracker.view());
  setHandler(eventsQuery, ({ after, limit } = {}) => tracker.journal.page(after, limit));
  // Sessions and review panels working for this landing report their lifecycle here.
  setHandler(runEventSignal, ({ key, ...event }) => tracker.journal.record(event, key));
  setHandler(
    answerUpdate,
    ({ questionId, text }) => {
      const question = tracker.questions.find((entry) => entry.answer === undefined && (!questionId || entry.id === questionId))!;
      tracker.answer(question.id, text.trim());
      return { accepted: true, questionId: question.id };
    },
    {
      validator: ({ questionId, text }) => {
        if (typeof text !== 'string' || text.length > 10_000) throw new Error('text must be a string of at most 10000 characters');
        const pending = tracker.questions.filter((entry) => entry.answer === undefined);
        if (pending.length === 0) throw new Error('the landing has no pending question');
        if (questionId && !pending.some((entry) => entry.id === questionId)) throw new Error(`no pending question ${questionId}`);
      },
    },
  );

  // The landing's budget, shared by its sessions: paused when spent, until extended or stopped.
  setHandler(
    budgetUpdate,
    (command) => {
      budgetControl.pending = command;
      return { accepted: true, budget: tracker.budget };
    },
    {
      validator: (command: BudgetCommand) => {
        // A landing takes `stop` only while paused: running, it has no budget decision to make.
        const paused = tracker.pausedFor !== undefined;
        const problem = command?.action === 'stop' && !paused ? 'the landing is not paused for its budget' : budgetCommandProblem(command, paused);
        if (problem) throw new Error(problem);
      },
    },
  );

  const queue: { id?: string; admitted: boolean } = { admitted: false };
  /** The tree the review panel last approved (null: a panel is configured but nothing approved yet). */
  let approvedTree: string | null = null;
  setHandler(admittedSignal, ({ queueId }) => {
    queue.id = queueId;
    queue.admitted = true;
  });

  const shared = proxyActivities<Activities>({ ...capsule, taskQueue });
  let host: Activities | undefined;
  let outcome: LandingOutcome;
  try {
    outcome = await land();
  } catch (error) {
    if (isCancellation(error)) {
      outcome = tracker.finish('cancelled', `cancelled in phase ${tracker.phase}; nothing was merged by this run`);
    } else if ((error as { type?: string }).type === FailureType.budgetExhausted) {
      const message = (error as Error).message;
      outcome = tracker.finish('budget-exhausted', `${message}; stopped in phase ${tracker.phase}; nothing was merged`, { type: FailureType.budgetExhausted, message });
    } else {
      const failure = failureOf(error);
      outcome = tracker.finish('failed', `failed in phase ${tracker.phase}: ${failure.message}`, { type: failure.type ?? 'TARMAC_INTERNAL', message: failure.message });
    }
  }
  // The finale runs even when the workflow is cancelled: cleanup by manifest, then the record.
  await CancellationScope.nonCancellable(async () => {
    // Free the target for the next landing, whether this one merged, failed or was cancelled.
    if (queue.id) await getExternalWorkflowHandle(queue.id).signal(releaseSignal, { landingId: runId }).catch(() => undefined);
    if (!host) return;
    const cleaner = host;
    tracker.enter('cleanup');
    try {
      await tracker.step('capsule.cleanupRun', 'capsule', () => cleaner['capsule.cleanupRun']({ runId }));
    } catch (error) {
      outcome.summary += ` (cleanup failed: ${failureOf(error).message})`;
    }
    tracker.enter('done');
    await cleaner['capsule.recordOutcome']({ outcome });
  });
  tracker.journal.finished = true;
  return outcome;

  async function land(): Promise<LandingOutcome> {
    tracker.enter('validate');
    const inspected = await tracker.step(
      'capsule.inspectTarget',
      'capsule',
      () => shared['capsule.inspectTarget']({ runId, repo: request.repo, target: request.target, heads: request.heads }),
      (value) => `target at ${value.targetSha.slice(0, 12)} on host ${value.hostId}`,
    );
    tracker.facts.targetSha = inspected.targetSha;
    // Everything after this touches the host's mirror, workspace or Docker daemon: pin to that host.
    const pinned = proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(inspected.hostId) });
    host = pinned;
    if (!inspected.gate.ok) return invalidGateFile(inspected.gate);
    /** The target's gate: read again when the target moves, so a re-gate runs what the target now declares. */
    let gate = inspected.gate.gate;
    const targetSha = inspected.targetSha;

    tracker.enter('prepare');
    await tracker.step('capsule.prepareRun', 'capsule', () => pinned['capsule.prepareRun']({ runId, repo: request.repo, targetSha }));

    tracker.enter('rebase');
    let resolvers = 0;
    const declaredDrops = new Map<string, string>();
    let rebased;
    /** The head a resolver delivered for the branch whose rebase stopped (its commits, imported from its bundle). */
    let resolvedHead: string | undefined;
    for (;;) {
      const resolution = resolvedHead;
      rebased = await tracker.step('capsule.rebaseBranches', 'capsule', () => pinned['capsule.rebaseBranches']({ runId, targetSha, heads: request.heads, ...(resolution ? { resolvedHead: resolution } : {}) }), (value) =>
        value.status === 'done'
          ? `at ${value.headSha.slice(0, 12)}; ${value.provenance.length} original commit(s), ${value.dropped.length} missing`
          : `conflict in ${value.files.join(', ')} at ${value.commit.slice(0, 12)}`,
      );
      if (rebased.status === 'done') break;
      if (resolvers >= maxResolverSessions) {
        return tracker.finish('conflict-unresolved', `rebase of ${rebased.branch} still conflicts at ${rebased.commit.slice(0, 12)} "${rebased.subject}" after ${resolvers} resolver session(s); nothing was merged`, {
          type: 'TARMAC_CONFLICT_UNRESOLVED',
          message: `conflicted files: ${rebased.files.join(', ')}`,
        });
      }
      resolvers += 1;
      const resolved = await session('resolver', `resolver-${resolvers}`, rebased.baseSha, inspected.hostId, {
        prompt: [
          `A rebase of branch ${rebased.branch} onto ${request.target} stopped at commit ${rebased.commit} "${rebased.subject}".`,
          `Conflicted files: ${rebased.files.join(', ')}.`,
          'Resolve each conflict keeping the intent of both sides, stage the files and run `GIT_EDITOR=true git rebase --continue`;',
          'repeat while the rebase stops again. Never drop a commit silently: list any you must drop in droppedCommits with a reason.',
        ].join('\n'),
        files: rebased.files,
      });
      // No resolver can run here: say so now, naming what is missing, instead of trying again.
      if (resolved.status === 'agent-unavailable') {
        return tracker.finish('agent-unavailable', `rebase of ${rebased.branch} conflicts in ${rebased.files.join(', ')} and no resolver could start: ${resolved.summary}; nothing was merged`, {
          type: FailureType.agentUnavailable,
          message: resolved.failure?.message ?? resolved.summary,
        });
      }
      for (const drop of resolved.result?.droppedCommits ?? []) declaredDrops.set(drop.sha, drop.reason);
      resolvedHead = resolved.status === 'delivered' ? resolved.headSha : undefined;
    }
    tracker.facts.provenance = rebased.provenance;
    const dropped = rebased.dropped.filter((entry) => !declaredDrops.has(entry.original));
    if (dropped.length > 0) {
      return tracker.finish('dropped-commits', `the rebased result is missing ${dropped.length} commit(s): ${dropped.map((entry) => `${entry.original.slice(0, 12)} "${entry.subject}" (${entry.branch})`).join(', ')}; nothing was merged`, {
        type: 'TARMAC_DROPPED_COMMITS',
        message: dropped.map((entry) => entry.original).join(', '),
      });
    }
    let head = { headSha: rebased.headSha, treeSha: rebased.treeSha, commitsSince: rebased.commitsSince };
    tracker.facts.headSha = head.headSha;
    tracker.facts.treeSha = head.treeSha;

    tracker.enter('questions');
    // Every head that can be merged is checked: here, after each fixup round and after each rebase onto a moved target.
    const unapproved = await checkGateFile(pinned, targetSha, head.headSha, 'After the rebase');
    if (unapproved) return unapproved;

    tracker.enter('gate');
    let round = 1;
    let verdict = await runGate(inspected.hostId, gate, round, head.headSha, head.treeSha);
    /**
     * The workspace head moved (a fixup, a rebase onto a moved target): record it, ask
     * about a gate-file change it makes, and gate the new tree. Returns the outcome when
     * the gate-file change was not approved.
     */
    const regate = async (since: string, when: string): Promise<LandingOutcome | undefined> => {
      head = await pinned['capsule.workspaceHead']({ runId, since });
      tracker.facts.headSha = head.headSha;
      tracker.facts.treeSha = head.treeSha;
      const stopped = await checkGateFile(pinned, since, head.headSha, when);
      if (stopped) return stopped;
      tracker.enter('gate');
      round += 1;
      verdict = await runGate(inspected.hostId, gate, round, head.headSha, head.treeSha);
      return undefined;
    };
    const maxRounds = gate.fixup?.maxRounds ?? 1;
    let fixups = 0;
    /** The agent of the last fixup round that delivered: review findings go to it as a follow-up (reuse first). */
    let lastAgent: ConversationRef | undefined;
    for (;;) {
      let problem: string;
      let repair: (round: number) => Promise<SessionOutcome | FixOutcome>;
      if (!verdict.green) {
        const red = redSummary(gate, head.treeSha, round);
        if (fixups >= maxRounds) {
          return fixups === 0
            ? tracker.finish('gate-failed', red.summary, { type: 'TARMAC_GATE_FAILED', message: red.message })
            : tracker.finish('fixup-failed', `${red.summary}; still red after ${fixups} fixup round(s)`, { type: 'TARMAC_FIXUP_FAILED', message: red.message });
        }
        problem = red.summary;
        // A red gate is a failing command: a fix loop reproduces it (playbooks first, then an agent).
        const failing = verdict.failing;
        repair = (fixup) => fixRedGate(gate, failing, fixup, inspected.hostId, head.headSha);
      } else {
        if (!gate.review) break;
        const review = await reviewTree(pinned, inspected.hostId, gate.review);
        if (review.status === 'approved') {
          approvedTree = review.treeSha;
          break;
        }
        if (review.status === 'review-incomplete') {
          return tracker.finish('review-incomplete', `${review.summary}; nothing was merged`, { type: 'TARMAC_REVIEW_INCOMPLETE', message: `missing reviewers: ${review.missing.join(', ')}` });
        }
        if (fixups >= maxRounds) {
          return tracker.finish('review-blocked', `${review.summary}; no fixup round left; nothing was merged`, { type: 'TARMAC_REVIEW_BLOCKED', message: review.summary });
        }
        problem = review.summary;
        const findings = review.blocking.map((finding) => `- ${finding.file}:${finding.line ?? 0} [${finding.severity}] ${finding.message}`).join('\n');
        const scriptEdits = request.agents?.scriptEdits;
        // Review findings are judgement, not a failing command: one fixer session addresses them, in
        // the conversation of the agent that last fixed this landing when there is one.
        const continues = lastAgent;
        repair = (fixup) =>
          session(
            'fixer',
            `fixer-${fixup}`,
            head.headSha,
            inspected.hostId,
            {
              prompt: `The review panel requested changes. Blocking findings:\n${findings}\nFix them and commit the fix.`,
              ...(scriptEdits ? { edits: scriptEdits } : {}),
              ...(request.agents?.scriptSlowMs ? { slowMs: request.agents.scriptSlowMs } : {}),
            },
            continues,
          );
      }
      tracker.enter('fixup');
      fixups += 1;
      const repaired = await repair(fixups);
      lastAgent = deliveredAgent(repaired) ?? lastAgent;
      const unavailable = 'outcome' in repaired ? (repaired.outcome === 'agent-unavailable' ? repaired.summary : undefined) : repaired.status === 'agent-unavailable' ? repaired.summary : undefined;
      if (unavailable !== undefined) {
        return tracker.finish('agent-unavailable', `${problem}; fixup round ${fixups} could not start an agent: ${unavailable}; nothing was merged`, { type: FailureType.agentUnavailable, message: unavailable });
      }
      // The gate decides, not the fixer's exit code or summary: only new commits and a re-gate count.
      const after = await pinned['capsule.workspaceHead']({ runId, since: head.headSha });
      if (after.commitsSince < 1) {
        return tracker.finish('fixup-failed', `fixup round ${fixups} added no commit; ${problem}`, { type: 'TARMAC_FIXUP_FAILED', message: 'the fixup round added no commit' });
      }
      const stopped = await regate(targetSha, `After fixup round ${fixups}`);
      if (stopped) return stopped;
    }
    if (verdict.lineage.length > 0) tracker.facts.supersedes = verdict.lineage;

    const verify = async (base: string) => {
      tracker.enter('verify');
      const suiteIds = gate.suites.map((suite) => suite.id);
      const approvedGateFile = gateFileApproval();
      return await tracker.step('capsule.verifyLanding', 'capsule', () =>
        pinned['capsule.verifyLanding']({
          runId,
          targetSha: base,
          headSha: head.headSha,
          gates: tracker.gates,
          suiteIds,
          dropped: dropped.map((entry) => entry.original),
          ...(gate.review ? { reviewedTreeSha: approvedTree } : {}),
          ...(approvedGateFile ? { approvedGateFile } : {}),
        }),
      );
    };
    const verified = await verify(targetSha);
    if (!verified.ok) {
      return tracker.finish('verify-failed', `verification refused the merge: ${verified.problems.join('; ')}`, { type: 'TARMAC_VERIFY_FAILED', message: verified.problems.join('; ') });
    }

    // Merges to one target go one at a time, through its queue.
    tracker.enter('queue');
    const { queueId } = await tracker.step('queue.requestAdmission', 'capsule', () => shared['queue.requestAdmission']({ repo: request.repo, target: request.target, landingId: runId }));
    queue.id = queueId;
    await condition(() => queue.admitted);

    tracker.enter('merge');
    let base = targetSha;
    for (let tries = 1; ; tries += 1) {
      try {
        const merged = await tracker.step('capsule.fastForwardTarget', 'capsule', () =>
          pinned['capsule.fastForwardTarget']({ runId, repo: request.repo, target: request.target, expectedTargetSha: base, headSha: head.headSha }),
        );
        tracker.facts.mergedSha = merged.mergedSha;
        break;
      } catch (error) {
        const failure = failureOf(error);
        if (failure.type !== FailureType.targetMoved) throw error;
        if (tries >= 5) return tracker.finish('target-moved', `${failure.message}; gave up after ${tries} tries; nothing was merged`, { type: failure.type, message: failure.message });
      }
      // The target moved while this landing waited (a push outside the queue, or an earlier
      // landing): rebase onto it and gate the new tree before trying again.
      const current = await tracker.step('capsule.currentTarget', 'capsule', () => pinned['capsule.currentTarget']({ repo: request.repo, target: request.target }));
      // The moved target may declare other suites (or break its gate file): the re-gate runs what it declares now.
      const reread = await tracker.step('capsule.readGateFile', 'capsule', () => pinned['capsule.readGateFile']({ repo: request.repo, sha: current }), (value) =>
        value.gate.ok ? `${value.gate.gate.suites.length} suite(s) at ${current.slice(0, 12)}` : `invalid at ${current.slice(0, 12)}`,
      );
      if (!reread.gate.ok) return invalidGateFile(reread.gate, ` (read after ${request.target} moved to ${current.slice(0, 12)}); nothing was merged`);
      gate = reread.gate.gate;
      const moved = await tracker.step('capsule.rebaseOnto', 'capsule', () => pinned['capsule.rebaseOnto']({ runId, fromSha: base, ontoSha: current }));
      if (moved.status === 'conflict') {
        return tracker.finish('target-moved', `${request.target} moved to ${current.slice(0, 12)} and the landing conflicts with it (${moved.files.join(', ')}); nothing was merged`, {
          type: FailureType.targetMoved,
          message: `conflicts with the new target in ${moved.files.join(', ')}`,
        });
      }
      const recheck = await tracker.step('capsule.checkPatches', 'capsule', () => pinned['capsule.checkPatches']({ runId, targetSha: current, heads: request.heads }));
      const lost = recheck.dropped.filter((entry) => !declaredDrops.has(entry.original));
      if (lost.length > 0) {
        return tracker.finish('dropped-commits', `rebasing onto the moved target lost ${lost.map((entry) => `"${entry.subject}"`).join(', ')}; nothing was merged`, {
          type: 'TARMAC_DROPPED_COMMITS',
          message: lost.map((entry) => entry.original).join(', '),
        });
      }
      base = current;
      tracker.facts.targetSha = base;
      const stopped = await regate(base, `After the rebase onto ${request.target} at ${base.slice(0, 12)}`);
      if (stopped) return stopped;
      if (!verdict.green) {
        const red = redSummary(gate, head.treeSha, round);
        return tracker.finish('gate-failed', `re-gate after ${request.target} moved: ${red.summary}`, { type: 'TARMAC_GATE_FAILED', message: red.message });
      }
      if (gate.review) {
        const review = await reviewTree(pinned, inspected.hostId, gate.review);
        if (review.status === 'approved') approvedTree = review.treeSha;
        else {
          return tracker.finish(review.status === 'review-incomplete' ? 'review-incomplete' : 'review-blocked', `review after ${request.target} moved: ${review.summary}; nothing was merged`, {
            type: review.status === 'review-incomplete' ? 'TARMAC_REVIEW_INCOMPLETE' : 'TARMAC_REVIEW_BLOCKED',
            message: review.summary,
          });
        }
      }
      const reverified = await verify(base);
      if (!reverified.ok) {
        return tracker.finish('verify-failed', `verification refused the merge: ${reverified.problems.join('; ')}`, { type: 'TARMAC_VERIFY_FAILED', message: reverified.problems.join('; ') });
      }
      tracker.enter('merge');
    }
    const superseded = verdict.lineage.length ? `; ${verdict.lineage.length} red result(s) superseded by the re-gate` : '';
    return tracker.finish(
      'landed',
      `${request.target} fast-forwarded to ${head.headSha.slice(0, 12)} (${head.commitsSince} commit(s), all ${gate.suites.length} suite(s) green on tree ${head.treeSha.slice(0, 12)}${superseded})`,
    );
  }
}

/** The conversation of the agent a fixup round ended with, when it delivered (a follow-up can continue it). */
function deliveredAgent(round: SessionOutcome | FixOutcome): ConversationRef | undefined {
  if ('outcome' in round) {
    const last = round.sessions.at(-1);
    return last && last.status === 'delivered' ? { sessionId: last.sessionId, attempt: last.attempts ?? 1, harnessModel: last.harnessModel } : undefined;
  }
  const attempt = round.attempts.at(-1);
  return round.status === 'delivered' && attempt ? { sessionId: round.sessionId, attempt: attempt.attempt, harnessModel: attempt.harnessModel } : undefined;
}
