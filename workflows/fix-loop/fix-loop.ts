import { CancellationScope, isCancellation, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { FixFailure } from '../../core/failures';
import type { FixOutcome, FixRequest } from '../../core/fix-types';
import { placementQueue } from '../../core/queues';
import { capsule } from '../activity-options';
import { FixRecord, type PartialFixOutcome } from './record';
import { causeOf } from '../run-record';
import { hostLost } from '../pinned';
import { agent } from './steps';
import { fixPhases, type FixNext, type FixRun } from './phases';

/** Hosts a fix loop of its own workspace may lose before it gives up. */
const maxLostHosts = 2;

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
        record.journal.record({
          kind: 'host',
          state: 'lost',
          hostId: record.hostId,
          reason: `no worker of host ${record.hostId} picked up a step within ${Math.round(record.hostLostAfterMs / 1000)} s; the fix loop places itself on a live host`,
        });
        record.hostId = '';
        record.host = undefined;
        continue;
      }
      const { message } = causeOf(error);
      partial = isCancellation(error)
        ? record.fail(FixFailure.cancelled, `cancelled in phase ${record.state.phase}`)
        : record.fail(FixFailure.error, `failed in phase ${record.state.phase}: ${message}`);
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
  ({ hostId: record.hostId, baseSha: record.baseSha } =
    request.workspace ?? (await placing['capsule.prepareSessionWorkspace']({ runId: request.runId, repo: request.repo, ref: request.branch })));
  const host = proxyActivities<Activities>({ ...capsule, ...record.hostOptions() });
  record.host = host;
  if (record.routedTo === 'architect') return await answer(record);
  const run: FixRun = {
    host,
    maxRepairs: request.maxRepairs ?? limits.maxRepairs,
    reproCommand: '',
    failure: { exitCode: null, logRef: '', tail: '' },
    attempt: 0,
    idleRounds: 0,
  };
  let step: FixNext = { next: 'ground' };
  while ('next' in step) step = await fixPhases[step.next](record, run);
  return step.outcome;
}

/** A question, not a fix: the architect answers it. */
async function answer(record: FixRecord): Promise<PartialFixOutcome> {
  record.enter('answer');
  const answered = await agent(record, record.request.request, 'architect-1');
  if (answered.status === 'agent-unavailable') return record.fail(FixFailure.agentUnavailable, answered.summary);
  const text = answered.result?.summary ?? answered.summary;
  return answered.status === 'delivered' ? record.finish('answered', text) : record.fail(FixFailure.agentFailed, text);
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
