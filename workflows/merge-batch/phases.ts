import { CancellationScope, condition, isCancellation, log, proxyActivities } from '@temporalio/workflow';
import type { Activities, StackedMember } from '../../activities';
import type { BatchMember, BatchOutcome, BatchRequest, BatchRound } from '../../core/batch-types';
import { FailureCode } from '../../core/failures';
import { defaultRunnerImage, suiteTimeoutMs, type GateFile } from '../../core/gate-file';
import type { BatchStatusView } from '../../core/messages';
import { hostQueue } from '../../core/queues';
import { bisectStep } from '../../policies/batch';
import { environmentBuild, gateSuite } from '../activity-options';
import type { EnvironmentDeclaration } from '../../core/environment';
import type { EnvironmentRef } from '../../core/environment-types';
import { causeOf } from '../run-record';
import type { Report } from './record';

/*
 * The batch's phases: stack the members on the target → bisect by gating prefixes (each a gate
 * round) → merge the green prefix → name the culprit and stack the rest again.
 */

/** A round or merge given up because a member of its prefix ended meanwhile: the stack is built again without it. */
const memberGone = Symbol('member gone');

export async function stackGateMerge(
  request: BatchRequest,
  host: Activities,
  outcome: BatchOutcome,
  report: Report,
  gone: Set<string>,
  progress: { state: BatchStatusView['state'] },
): Promise<void> {
  const { repo, target, hostId } = request;
  const { batchId } = outcome;
  let onto = await host['capsule.currentTarget']({ repo, target });
  const read = await host['capsule.readGateFile']({ repo, sha: onto });
  if (!read.gate.ok) {
    outcome.summary = `the gate file of ${target} at ${onto.slice(0, 12)} is invalid (${read.gate.field}: ${read.gate.message}); each landing goes on alone`;
    return;
  }
  if (read.environment && !read.environment.ok) {
    outcome.summary = `the environment declaration of ${target} at ${onto.slice(0, 12)} is invalid (${read.environment.file}: ${read.environment.field}: ${read.environment.message}); each landing goes on alone`;
    return;
  }
  const gate = read.gate.gate;
  // Absent in answers of workers before environments: none, as then.
  const declaration = read.environment?.ok ? read.environment.declaration : undefined;
  await host['capsule.prepareRun']({ runId: batchId, repo, targetSha: onto });
  let pending: BatchMember[] = request.members;
  while (pending.length > 0) {
    pending = pending.filter((member) => !gone.has(member.landingId));
    if (pending.length === 0) return;
    progress.state = 'stacking';
    const { stacked, left } = await host['capsule.stackBatch']({ batchId, onto, members: pending });
    for (const entry of left) await report(entry.landingId, { kind: 'retry', batchId, reason: entry.reason });
    if (stacked.length === 0) return;
    progress.state = 'gating';
    const decided = await whileAllThere(gone, stacked, () => bisect(request, gate, stacked, outcome, onto, declaration));
    if (decided === memberGone) continue;
    if (decided.green > 0) {
      const prefix = stacked.slice(0, decided.green);
      if (prefix.some((member) => gone.has(member.landingId))) continue;
      progress.state = 'merging';
      const merged = await mergePrefix(request, host, gate, outcome, onto, prefix, report);
      if (!merged) return;
      onto = merged;
    }
    if (decided.culprit === undefined) return;
    pending = await reportCulprit(request, outcome, stacked, decided.culprit, report);
    log.info('batch culprit found; the rest is stacked again', { batchId, hostId, culprit: stacked[decided.culprit]!.landingId, rest: pending.length });
  }
}

/** Tells the culprit why it is one (its red round, the suites, the logs); the members after it, to be stacked again. */
async function reportCulprit(request: BatchRequest, outcome: BatchOutcome, stacked: StackedMember[], at: number, report: Report): Promise<BatchMember[]> {
  const { batchId } = outcome;
  const culprit = stacked[at]!;
  const red = outcome.rounds.find((round) => round.prefix === at + 1 && round.headSha === culprit.headSha)!;
  const failing = [
    ...red.gates.filter((result) => result.status !== 'passed' && !result.excused).map((result) => result.suiteId),
    ...(red.environmentFailed ? ['environment'] : []),
  ];
  await report(culprit.landingId, {
    kind: 'culprit',
    batchId,
    failing,
    treeSha: red.treeSha,
    round: red.round,
    summary: `in batch ${batchId} the stack up to this landing was red (round ${red.round}, tree ${red.treeSha.slice(0, 12)}: ${failing.join(', ')} failed${red.environmentFailed ? ` (${red.environmentFailed.why})` : ''}; log: ${[...red.gates.filter((result) => result.status !== 'passed').map((result) => result.logRef), ...(red.environmentFailed ? [red.environmentFailed.logRef] : [])].join(', ')}) while the stack before it was ${at === 0 ? 'the target itself' : 'green'}`,
  });
  const after = new Set(stacked.slice(at + 1).map((member) => member.landingId));
  return request.members.filter((member) => after.has(member.landingId));
}

/**
 * Runs `work` (gate rounds of this stack) unless a member of the stack ends meanwhile: then the
 * round in flight is cancelled (its containers stop) and the stack is built again without it.
 */
async function whileAllThere<T>(gone: Set<string>, stacked: StackedMember[], work: () => Promise<T>): Promise<T | typeof memberGone> {
  const someoneGone = () => stacked.some((member) => gone.has(member.landingId));
  const scope = new CancellationScope();
  void condition(someoneGone).then(() => scope.cancel());
  try {
    return await scope.run(work);
  } catch (error) {
    if (isCancellation(error) && someoneGone()) return memberGone;
    throw error;
  }
}

/** Gates prefixes of the stack until the bisection decides: the green prefix and the culprit, if any. */
async function bisect(
  request: BatchRequest,
  gate: GateFile,
  stacked: StackedMember[],
  outcome: BatchOutcome,
  onto: string,
  declaration?: EnvironmentDeclaration,
): Promise<{ green: number; culprit?: number }> {
  const results: Record<number, 'green' | 'red'> = {};
  for (;;) {
    const step = bisectStep(stacked.length, results);
    if (step.kind === 'decided') return step;
    const head = stacked[step.prefix - 1]!;
    const round = await gateRound(request, gate, outcome, head, step.prefix, onto, declaration);
    results[step.prefix] = round.green ? 'green' : 'red';
  }
}

/**
 * Every suite of the target's gate file on one prefix's tree (the batch's own workspace and
 * containers). A red suite is run once more on the identical tree (never from the gate cache): green
 * then is a flake (policies/flake.ts `flaky`), recorded with both runs and not counted against the
 * prefix — a flaky suite does not send the bisection after an innocent landing. A red the gate cache
 * answered stands (the cache holds that tree's latest run).
 */
async function gateRound(
  request: BatchRequest,
  gate: GateFile,
  outcome: BatchOutcome,
  head: StackedMember,
  prefix: number,
  onto: string,
  declaration?: EnvironmentDeclaration,
): Promise<BatchRound> {
  const number = outcome.rounds.length + 1;
  const gates: BatchRound['gates'] = [];
  const close = (green: boolean, environmentFailed?: BatchRound['environmentFailed']): BatchRound => {
    const round: BatchRound = {
      round: number,
      prefix,
      headSha: head.headSha,
      treeSha: head.treeSha,
      green,
      gates,
      ...(environmentFailed ? { environmentFailed } : {}),
    };
    outcome.rounds.push(round);
    return round;
  };
  // The prefix's tree runs in its own environment (its inputs may be a member's): a setup that fails makes the round red.
  let environment: EnvironmentRef | undefined;
  if (declaration) {
    const ready = await prepareEnvironment(request, gate, outcome, head, onto, declaration);
    if (!ready.ok) return close(false, { why: ready.failure.why, logRef: ready.failure.logRef });
    environment = ready.environment;
  }
  for (const suite of gate.suites) gates.push(await gateSuiteOnce(request, gate, outcome, head, number, suite, environment));
  return close(gates.every((result) => result.status === 'passed' || result.excused !== undefined));
}

/** The environment of a prefix's tree, built on the batch's host. */
function prepareEnvironment(
  request: BatchRequest,
  gate: GateFile,
  outcome: BatchOutcome,
  head: StackedMember,
  onto: string,
  declaration: EnvironmentDeclaration,
) {
  const builder = proxyActivities<Activities>({
    ...environmentBuild(declaration.timeoutMs),
    taskQueue: hostQueue(request.hostId),
    ...(request.hostLostAfterMs ? { scheduleToStartTimeout: request.hostLostAfterMs } : {}),
  });
  return builder['environment.prepare']({
    runId: outcome.batchId,
    repo: request.repo,
    commitSha: head.headSha,
    baseSha: onto,
    declaration,
    fallbackImage: gate.image ?? defaultRunnerImage,
  });
}

/** One suite on a prefix's tree; a red not from the cache is run once more, and green then is a flake excused by the retry. */
async function gateSuiteOnce(
  request: BatchRequest,
  gate: GateFile,
  outcome: BatchOutcome,
  head: StackedMember,
  number: number,
  suite: GateFile['suites'][number],
  environment: EnvironmentRef | undefined,
): Promise<BatchRound['gates'][number]> {
  const timeoutMs = suiteTimeoutMs(suite);
  const runner = proxyActivities<Activities>({
    ...gateSuite(timeoutMs),
    taskQueue: hostQueue(request.hostId),
    ...(request.hostLostAfterMs ? { scheduleToStartTimeout: request.hostLostAfterMs } : {}),
  });
  const input = {
    runId: outcome.batchId,
    repo: request.repo,
    commitSha: head.headSha,
    treeSha: head.treeSha,
    suite,
    image: gate.image ?? defaultRunnerImage,
    timeoutMs,
    round: number,
    ...(environment ? { environment } : {}),
  };
  const result = await runner['gate.runSuite'](input);
  if (result.status === 'passed' || result.cache === 'hit') return { ...result, round: number };
  const again = await runner['gate.runSuite']({ ...input, reuse: false, evidence: 'same-tree' });
  const evidence = [
    {
      on: 'same-tree' as const,
      commitSha: head.headSha,
      treeSha: head.treeSha,
      status: again.status,
      exitCode: again.exitCode,
      logRef: again.logRef,
      durationMs: again.durationMs,
      ...(again.cache ? { cache: again.cache } : {}),
    },
  ];
  return again.status === 'passed'
    ? { ...result, round: number, settled: 'flaky', evidence, excused: { by: 'retry' } }
    : { ...result, round: number, evidence };
}

/**
 * Verify (on exactly the prefix's head and the target it is stacked on) and fast-forward the target
 * to it; every member of the prefix landed. The target's new value, or undefined when it could not
 * move (moved outside the queue, refused): then every member still waiting goes on alone.
 */
async function mergePrefix(
  request: BatchRequest,
  host: Activities,
  gate: GateFile,
  outcome: BatchOutcome,
  onto: string,
  prefix: StackedMember[],
  report: Report,
): Promise<string | undefined> {
  const { repo, target } = request;
  const { batchId } = outcome;
  const head = prefix[prefix.length - 1]!;
  const round = outcome.rounds.find((entry) => entry.green && entry.treeSha === head.treeSha)!;
  const verified = await host['capsule.verifyLanding']({
    runId: batchId,
    targetSha: onto,
    headSha: head.headSha,
    gates: round.gates,
    suiteIds: gate.suites.map((suite) => suite.id),
    dropped: [],
  });
  if (!verified.ok) {
    outcome.summary = `verification refused the batch's merge of ${head.headSha.slice(0, 12)}: ${verified.problems.join('; ')}; each landing goes on alone`;
    return undefined;
  }
  try {
    await host['capsule.fastForwardTarget']({ runId: batchId, repo, target, expectedTargetSha: onto, headSha: head.headSha });
  } catch (error) {
    const { type, message } = causeOf(error);
    if (type !== FailureCode.targetMoved && type !== FailureCode.pushRefused) throw error;
    outcome.summary = `the batch could not merge: ${message}; each landing goes on alone`;
    return undefined;
  }
  const members = prefix.map((member) => member.landingId);
  outcome.merges.push({ from: onto, to: head.headSha, members, round: round.round });
  for (const member of prefix) {
    await report(member.landingId, {
      kind: 'landed',
      batchId,
      mergedSha: head.headSha,
      stackedSha: member.headSha,
      treeSha: round.treeSha,
      members,
      round: round.round,
    });
  }
  return head.headSha;
}
