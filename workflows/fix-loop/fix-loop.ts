import { CancellationScope, isCancellation, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { parseDuration } from '../../core/duration';
import { FixFailure } from '../../core/failures';
import type { FixOutcome, FixRequest } from '../../core/fix-types';
import { placementQueue } from '../../core/queues';
import type { SessionOutcome } from '../../core/session-types';
import { budgetExhausted } from '../../policies/budget';
import { afterFailedVerify } from '../../policies/repeated-failure';
import { discoverRepro } from '../../policies/repro-discovery';
import { capsule } from '../activity-options';
import { FixRecord, type PartialFixOutcome } from './record';
import { causeOf } from '../run-record';
import { hostLost } from '../pinned';
import { askAgent, undecided } from '../questions';
import { agent, readFacts, repro, roundToolFailures, tryPlaybooks, type ReproRun } from './steps';

/** The recipe's wait for an answer to a question (none: as long as it takes). */
function questionWaitMs(request: FixRequest): number | undefined {
  const wait = request.recipes?.limits.questions?.wait;
  return wait ? parseDuration(wait) : undefined;
}

/** Hosts a fix loop of its own workspace may lose before it gives up. */
const maxLostHosts = 2;

/** Playbook edits one playbook phase may chain (each verified; the next one sees the new failure). */
const maxPlaybookChain = 3;

/**
 * fixLoop: route by intent → Ground (read the repository; the repro from the request's words or
 * the repository's definitions, never invented) → Discover (run the repro) → Playbook (a known
 * signature: line edits) → Edit (agent session) → Verify (re-run the repro) → Repair (≤
 * maxRepairs; the same failure twice → back to Playbook, then command-thrashing) → Outcome.
 * Every exit path returns and stores an outcome with its metadata; the fixes go to a run-owned
 * branch, ready to be landed.
 */
export async function fixLoop(request: FixRequest): Promise<FixOutcome> {
  const record = new FixRecord(request);
  let partial: PartialFixOutcome;
  for (;;) {
    try {
      partial = await loop(record);
    } catch (error) {
      // Its own workspace's host is lost: what lived there (workspace, fixes) went with it. The loop
      // places itself again on a live host and starts over from its request (same run, journal and
      // meters). Inside a landing the workspace is the landing's: the landing re-places itself.
      if (!request.workspace && record.hostId && hostLost(error) && record.lostHosts.length < maxLostHosts) {
        record.lostHosts.push(record.hostId);
        record.journal.record({ kind: 'host', state: 'lost', hostId: record.hostId, reason: `no worker of host ${record.hostId} picked up a step within ${Math.round(record.hostLostAfterMs / 1000)} s; the fix loop places itself on a live host` });
        record.hostId = '';
        record.host = undefined;
        continue;
      }
      const { message } = causeOf(error);
      partial = isCancellation(error) ? record.fail(FixFailure.cancelled, `cancelled in phase ${record.state.phase}`) : record.fail(FixFailure.error, `failed in phase ${record.state.phase}: ${message}`);
    }
    break;
  }
  record.outcome = await CancellationScope.nonCancellable(() => finale(record, partial));
  record.journal.record({ kind: 'outcome', status: record.outcome.outcome, summary: record.outcome.summary });
  record.journal.finished = true;
  return record.outcome;
}

async function loop(record: FixRecord): Promise<PartialFixOutcome> {
  const { request, state } = record;
  const shared = proxyActivities<Activities>({ ...capsule, taskQueue: workflowInfo().taskQueue });
  // The loop's limits from the recipes it started with (a run started before snapshots reads the live file).
  const limits = request.recipes?.playbooks.limits ?? (await shared['fix.limits']());
  state.meters.capsulesRun += request.recipes ? 1 : 2;
  record.sessionTimeout = limits.sessionTimeout;
  // A workspace of its own is placed through the placement queue: the worker that prepares it is a host.
  const placing = proxyActivities<Activities>({ ...capsule, taskQueue: placementQueue(workflowInfo().taskQueue) });
  ({ hostId: record.hostId, baseSha: record.baseSha } = request.workspace ?? (await placing['capsule.prepareSessionWorkspace']({ runId: request.runId, repo: request.repo, ref: request.branch })));
  const host = proxyActivities<Activities>({ ...capsule, ...record.hostOptions() });
  record.host = host;

  if (record.routedTo === 'architect') {
    record.enter('answer');
    const answer = await agent(record, request.request, 'architect-1');
    if (answer.status === 'agent-unavailable') return record.fail(FixFailure.agentUnavailable, answer.summary);
    const text = answer.result?.summary ?? answer.summary;
    return answer.status === 'delivered' ? record.finish('answered', text) : record.fail(FixFailure.agentFailed, text);
  }

  record.enter('ground');
  const facts = await readFacts(record);
  const choice = discoverRepro({ request: request.request, ...(request.reproCommand ? { reproCommand: request.reproCommand } : {}), intent: record.intent, facts });
  record.ground(facts, choice);
  if (choice.command === null) return record.fail(FixFailure.noRepro, choice.reason);
  const reproCommand = choice.command;

  record.enter('discover');
  let failure = await repro(record);
  if (failure.exitCode === 0) return record.finish('nothing-to-fix', `\`${reproCommand}\` already exits 0; nothing to fix`);

  record.enter('playbook');
  let playbooks = await playbookPhase(record, failure);
  if (playbooks.fixed) return record.finish('fixed', `${playbooks.applied.join('; ')}; \`${reproCommand}\` now exits 0`);
  failure = playbooks.failure;

  const maxRepairs = request.maxRepairs ?? limits.maxRepairs;
  let idleRounds = 0;
  let previous: SessionOutcome | undefined;
  for (let attempt = 0; attempt <= maxRepairs; attempt += 1) {
    record.enter(attempt === 0 ? 'edit' : 'repair');
    if (attempt > 0) state.repairAttempts += 1;
    // A spent budget ends the loop before another agent starts (what it fixed so far stays).
    const whole = record.loopBudget();
    const spent = whole ? budgetExhausted(record.spend(), whole.limits) : undefined;
    if (spent) return record.fail(FixFailure.budgetExhausted, `the budget is spent (${spent}) after ${attempt} agent round(s); \`${reproCommand}\` still exits ${failure.exitCode}`);
    const before = await host['capsule.workspaceHead']({ runId: request.runId, since: record.baseSha });
    // Reuse first: a repair is a follow-up message to the agent of the round before (when it
    // delivered), in its conversation; the first round, or one after a dead session, starts afresh.
    const earlier = previous?.status === 'delivered' ? previous.attempts.at(-1) : undefined;
    const continues = earlier ? { sessionId: previous!.sessionId, attempt: earlier.attempt, harnessModel: earlier.harnessModel } : undefined;
    const ask = continues ? `Your change did not fix it: \`${reproCommand}\` still fails (exit ${failure.exitCode}).` : `Request: ${request.request}\nThe command \`${reproCommand}\` fails (exit ${failure.exitCode}).`;
    const prompt = [`${ask} Its output ends with:`, '```', failure.tail, '```', 'Fix the cause in the source (not the tests) and commit.'].join('\n');
    previous = await agent(record, prompt, `${record.routedTo}-${attempt + 1}`, continues);
    // Questions first: answered before any more agent time; the answers go to a follow-up in the asker's conversation.
    while (previous.status === 'asked') {
      const answers = await askAgent(record.desk, previous, `the fix loop's agent round ${attempt + 1} on \`${reproCommand}\` (exit ${failure.exitCode})`, questionWaitMs(request));
      if (!('followUp' in answers)) return record.fail(FixFailure.needsDecision, undecided(answers).summary);
      record.followUps += 1;
      previous = await agent(record, `${answers.followUp.message}\n\n${prompt}`, `${record.routedTo}-${attempt + 1}-answered-${record.followUps}`, answers.followUp.continues);
    }
    // No agent could start: that is the answer, not a round that "changed nothing" (never thrashing).
    if (previous.status === 'agent-unavailable') return record.fail(FixFailure.agentUnavailable, `${previous.summary}; \`${reproCommand}\` still exits ${failure.exitCode}`);
    const after = await host['capsule.workspaceHead']({ runId: request.runId, since: before.headSha });
    // A round that changed nothing on disk is thrashing; two of them end the loop.
    if (after.commitsSince === 0) {
      idleRounds += 1;
      if (idleRounds >= 2) return record.fail(FixFailure.thrashing, `${idleRounds} rounds changed nothing on disk; \`${reproCommand}\` still exits ${failure.exitCode}`);
      continue;
    }
    record.enter('verify');
    failure = await repro(record);
    if (failure.exitCode === 0) return record.finish('fixed', `\`${reproCommand}\` exits 0 after ${attempt + 1} agent round(s)`);
    state.verifyFailed = true;
    // Limits: the same failure again, or a command the agent kept failing, go back to the playbooks
    // with the new failure rather than to another round like the last; none applying to a repeated
    // failure ends the loop.
    const next = afterFailedVerify({ seen: record.sightings, latest: failure.sighting!, toolFailures: roundToolFailures(previous) });
    if (next.move === 'playbook') {
      record.enter('playbook');
      record.ground(await readFacts(record));
      playbooks = await playbookPhase(record, failure);
      if (playbooks.fixed) return record.finish('fixed', `${playbooks.applied.join('; ')} after ${attempt + 1} agent round(s) (${next.why}); \`${reproCommand}\` now exits 0`);
      if (playbooks.applied.length === 0 && next.orThrash) return record.fail(FixFailure.commandThrashing, `${next.why}, and no playbook applies to that failure; another agent round would repeat the last`);
      failure = playbooks.failure;
    }
  }
  return record.fail(FixFailure.repairsExhausted, `\`${reproCommand}\` still exits ${failure.exitCode} after ${maxRepairs} repair(s)`);
}

/**
 * The playbook phase: playbooks on the failure; each one applied is verified, and a new failure
 * gets the playbooks again (a chain of known mistakes, up to maxPlaybookChain). Make's database
 * is read again after an edit, so the next playbook sees the tree as it now is.
 */
async function playbookPhase(record: FixRecord, failure: ReproRun): Promise<{ fixed: boolean; applied: string[]; failure: ReproRun }> {
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

/**
 * The finale: publish the fixes (if any) to the run-owned branch, clean up, store the outcome.
 * Inside a landing the fixes stay in the landing's workspace, which the landing gates and cleans.
 */
async function finale(record: FixRecord, partial: PartialFixOutcome): Promise<FixOutcome> {
  const { request, host, baseSha } = record;
  if (request.workspace) {
    const filesChanged = host ? await host['capsule.changedFiles']({ runId: request.runId, targetSha: baseSha }).catch(() => [] as string[]) : [];
    return { ...partial, filesChanged, fixBranch: null };
  }
  let filesChanged: string[] = [];
  let fixBranch: string | null = null;
  if (host && baseSha) {
    const branch = `tarmac/fix/${request.runId}`;
    const published = await host['fix.publishFixes']({ runId: request.runId, repo: request.repo, baseSha, branch }).catch(() => undefined);
    filesChanged = published?.filesChanged ?? [];
    if (published?.pushed) fixBranch = branch;
    await host['capsule.cleanupRun']({ runId: request.runId }).catch(() => undefined);
  }
  const outcome: FixOutcome = { ...partial, filesChanged, fixBranch };
  if (host) await host['capsule.recordOutcome']({ outcome: outcome as never, name: 'fix-outcome' }).catch(() => undefined);
  return outcome;
}
