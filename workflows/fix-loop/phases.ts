import { parseDuration } from '../../core/duration';
import { FixFailure } from '../../core/failures';
import type { FixRequest } from '../../core/fix-types';
import type { SessionOutcome } from '../../core/session-types';
import type { Activities } from '../../activities';
import { budgetExhausted } from '../../policies/budget';
import { afterFailedVerify } from '../../policies/repeated-failure';
import { discoverRepro } from '../../policies/repro-discovery';
import { askAgent, undecided } from '../questions';
import type { FixRecord, PartialFixOutcome } from './record';
import { agent, readFacts, repro, roundToolFailures, tryPlaybooks, type ReproRun } from './steps';

/**
 * The fix loop's phases, in the order of the design: ground (read the repository, choose the
 * repro) → discover (run it) → playbook (known signatures) → edit (an agent round; `repair` after
 * the first) → verify (the repro again) → edit, or back to the playbooks. Each phase is
 * (record, run) → the next phase or the outcome; fix-loop.ts loops over this table.
 */
export type FixPhase = 'ground' | 'discover' | 'playbook' | 'edit' | 'verify';
export type FixNext = { next: FixPhase } | { outcome: PartialFixOutcome };
const go = (next: FixPhase): FixNext => ({ next });
const end = (outcome: PartialFixOutcome): FixNext => ({ outcome });

/** What the phases hand on: the workspace's host, the repro and its latest failure, the agent rounds so far. */
export interface FixRun {
  host: Activities;
  maxRepairs: number;
  reproCommand: string;
  failure: ReproRun;
  /** The agent round under way (0: the first edit; after it, repairs). */
  attempt: number;
  /** Rounds that changed nothing on disk. */
  idleRounds: number;
  /** The last agent round's session (its conversation is the next round's, when it delivered). */
  previous?: SessionOutcome;
}

/** Playbook edits one playbook phase may chain (each verified; the next one sees the new failure). */
const maxPlaybookChain = 3;

/** The recipe's wait for an answer to a question (none: as long as it takes). */
function questionWaitMs(request: FixRequest): number | undefined {
  const wait = request.recipes?.limits.questions?.wait;
  return wait ? parseDuration(wait) : undefined;
}

async function ground(record: FixRecord, run: FixRun): Promise<FixNext> {
  const { request } = record;
  record.enter('ground');
  const facts = await readFacts(record);
  const choice = discoverRepro({
    request: request.request,
    ...(request.reproCommand ? { reproCommand: request.reproCommand } : {}),
    intent: record.intent,
    facts,
  });
  record.ground(facts, choice);
  if (choice.command === null) return end(record.fail(FixFailure.noRepro, choice.reason));
  run.reproCommand = choice.command;
  return go('discover');
}

async function discover(record: FixRecord, run: FixRun): Promise<FixNext> {
  record.enter('discover');
  run.failure = await repro(record);
  if (run.failure.exitCode === 0) return end(record.finish('nothing-to-fix', `\`${run.reproCommand}\` already exits 0; nothing to fix`));
  return go('playbook');
}

async function playbook(record: FixRecord, run: FixRun): Promise<FixNext> {
  record.enter('playbook');
  const playbooks = await playbookChain(record, run.failure);
  if (playbooks.fixed) return end(record.finish('fixed', `${playbooks.applied.join('; ')}; \`${run.reproCommand}\` now exits 0`));
  run.failure = playbooks.failure;
  return go('edit');
}

/** One agent round (an edit, then repairs): the agent's questions answered first; a round that changed nothing is idle. */
async function edit(record: FixRecord, run: FixRun): Promise<FixNext> {
  const { request, state } = record;
  const { attempt, reproCommand, failure } = run;
  record.enter(attempt === 0 ? 'edit' : 'repair');
  if (attempt > 0) state.repairAttempts += 1;
  // A spent budget ends the loop before another agent starts (what it fixed so far stays).
  const whole = record.loopBudget();
  const spent = whole ? budgetExhausted(record.spend(), whole.limits) : undefined;
  if (spent)
    return end(
      record.fail(
        FixFailure.budgetExhausted,
        `the budget is spent (${spent}) after ${attempt} agent round(s); \`${reproCommand}\` still exits ${failure.exitCode}`,
      ),
    );
  const before = await run.host['capsule.workspaceHead']({ runId: request.runId, since: record.baseSha });
  const asked = await agentRound(record, run);
  if (asked) return end(asked);
  // No agent could start: that is the answer, not a round that "changed nothing" (never thrashing).
  if (run.previous!.status === 'agent-unavailable')
    return end(record.fail(FixFailure.agentUnavailable, `${run.previous!.summary}; \`${reproCommand}\` still exits ${failure.exitCode}`));
  const after = await run.host['capsule.workspaceHead']({ runId: request.runId, since: before.headSha });
  if (after.commitsSince !== 0) return go('verify');
  // A round that changed nothing on disk is thrashing; two of them end the loop.
  run.idleRounds += 1;
  if (run.idleRounds >= 2)
    return end(record.fail(FixFailure.thrashing, `${run.idleRounds} rounds changed nothing on disk; \`${reproCommand}\` still exits ${failure.exitCode}`));
  return nextRound(record, run);
}

/**
 * The agent's round: reuse first — a repair is a follow-up message to the agent of the round
 * before (when it delivered), in its conversation; the first round, or one after a dead session,
 * starts afresh. Its questions are answered before any more agent time, in a follow-up in the
 * asker's conversation. Returns the outcome when a question stays undecided.
 */
async function agentRound(record: FixRecord, run: FixRun): Promise<PartialFixOutcome | undefined> {
  const { request } = record;
  const { attempt, reproCommand, failure, previous } = run;
  const earlier = previous?.status === 'delivered' ? previous.attempts.at(-1) : undefined;
  const continues = earlier ? { sessionId: previous!.sessionId, attempt: earlier.attempt, harnessModel: earlier.harnessModel } : undefined;
  const ask = continues
    ? `Your change did not fix it: \`${reproCommand}\` still fails (exit ${failure.exitCode}).`
    : `Request: ${request.request}\nThe command \`${reproCommand}\` fails (exit ${failure.exitCode}).`;
  const prompt = [`${ask} Its output ends with:`, '```', failure.tail, '```', 'Fix the cause in the source (not the tests) and commit.'].join('\n');
  run.previous = await agent(record, prompt, `${record.routedTo}-${attempt + 1}`, continues);
  while (run.previous.status === 'asked') {
    const answers = await askAgent(
      record.desk,
      run.previous,
      `the fix loop's agent round ${attempt + 1} on \`${reproCommand}\` (exit ${failure.exitCode})`,
      questionWaitMs(request),
    );
    if (!('followUp' in answers)) return record.fail(FixFailure.needsDecision, undecided(answers).summary);
    record.followUps += 1;
    run.previous = await agent(
      record,
      `${answers.followUp.message}\n\n${prompt}`,
      `${record.routedTo}-${attempt + 1}-answered-${record.followUps}`,
      answers.followUp.continues,
    );
  }
  return undefined;
}

/**
 * The repro again after an agent round. Limits: the same failure again, or a command the agent
 * kept failing, go back to the playbooks with the new failure rather than to another round like
 * the last; none applying to a repeated failure ends the loop.
 */
async function verify(record: FixRecord, run: FixRun): Promise<FixNext> {
  const { attempt, reproCommand } = run;
  record.enter('verify');
  run.failure = await repro(record);
  if (run.failure.exitCode === 0) return end(record.finish('fixed', `\`${reproCommand}\` exits 0 after ${attempt + 1} agent round(s)`));
  record.state.verifyFailed = true;
  const next = afterFailedVerify({ seen: record.sightings, latest: run.failure.sighting!, toolFailures: roundToolFailures(run.previous!) });
  if (next.move === 'playbook') {
    record.enter('playbook');
    record.ground(await readFacts(record));
    const playbooks = await playbookChain(record, run.failure);
    if (playbooks.fixed)
      return end(record.finish('fixed', `${playbooks.applied.join('; ')} after ${attempt + 1} agent round(s) (${next.why}); \`${reproCommand}\` now exits 0`));
    if (playbooks.applied.length === 0 && next.orThrash)
      return end(record.fail(FixFailure.commandThrashing, `${next.why}, and no playbook applies to that failure; another agent round would repeat the last`));
    run.failure = playbooks.failure;
  }
  return nextRound(record, run);
}

/** Another agent round, while repairs are left. */
function nextRound(record: FixRecord, run: FixRun): FixNext {
  run.attempt += 1;
  if (run.attempt <= run.maxRepairs) return go('edit');
  return end(record.fail(FixFailure.repairsExhausted, `\`${run.reproCommand}\` still exits ${run.failure.exitCode} after ${run.maxRepairs} repair(s)`));
}

export const fixPhases: Record<FixPhase, (record: FixRecord, run: FixRun) => Promise<FixNext>> = {
  ground,
  discover,
  playbook,
  edit,
  verify,
};

/**
 * The playbook phase: playbooks on the failure; each one applied is verified, and a new failure
 * gets the playbooks again (a chain of known mistakes, up to maxPlaybookChain). Make's database
 * is read again after an edit, so the next playbook sees the tree as it now is.
 */
async function playbookChain(record: FixRecord, failure: ReproRun): Promise<{ fixed: boolean; applied: string[]; failure: ReproRun }> {
  const applied: string[] = [];
  for (let link = 0; link < maxPlaybookChain; link += 1) {
    if (link > 0) record.ground(await readFacts(record));
    const playbook = await tryPlaybooks(record, failure);
    if (!playbook) break;
    applied.push(`playbook ${playbook.playbookId}: ${playbook.summary}`);
    record.enter('verify');
    failure = await repro(record);
    if (failure.exitCode === 0) return { fixed: true, applied, failure };
    record.state.verifyFailed = true;
    record.enter('playbook');
  }
  return { fixed: false, applied, failure };
}
