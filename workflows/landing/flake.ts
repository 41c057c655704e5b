import { patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { parseDuration } from '../../core/duration';
import { defaultRunnerImage, suiteTimeoutMs, type GateFile, type GateSuite } from '../../core/gate-file';
import { hostQueue } from '../../core/queues';
import type { GateEvidenceRun, GateSuiteResult } from '../../core/types';
import type { EnvironmentRef } from '../../core/environment-types';
import { decide, flakePolicy, settle, wantsEvidence } from '../../policies/flake';
import type { GateVerdict } from '../../policies/supersedes';
import { gateSuite } from '../activity-options';
import type { LandingStepContext } from './step-context';

/**
 * The history marker of landings that settle a red gate round by evidence (docs/VERSIONING.md): a
 * red round now issues more commands (the quarantine check, the base's tree, the evidence runs, a
 * quarantine), so a landing recorded before replays its red rounds as they ran.
 */
const flakeEvidencePatch = 'gate-flake-evidence';

/** What settling a red needs beyond the round: the base the head is rebased onto, the host's activities, the worker's local ones. */
export interface SettleWith {
  baseSha: string;
  host: Activities;
  local: Activities;
  /** The repository's environment of the round's tree (issue 24): the run again uses it. */
  environment?: EnvironmentRef;
  /** The environment of the base's tree, made when a run on the base needs it (its inputs may differ). */
  environmentOnBase?: () => Promise<EnvironmentRef | undefined>;
}

/**
 * After a gate round with red suites: flakes settled by evidence (policies/flake.ts). A suite
 * quarantined on the target is excused as it is (it ran, so the record keeps its result; no evidence
 * is spent on it). Every other red suite — failed or timed out — is run once more on the identical
 * tree (never from the gate cache; a red the cache answered stands as that run) and once on the base
 * (the cache may answer for a base gated before), side by side; the two runs settle it `flaky`, `pre-existing` or `failed`, and the recipe's
 * `limits.gate` decides whether it blocks, and whether the suite is quarantined on the target. The
 * round's red record gets the settlement, the evidence runs with their logs, and why it does not
 * block (`excused`); the verdict that follows counts an excused red toward green.
 */
export async function settleRed(
  ctx: LandingStepContext,
  pinned: string,
  gate: GateFile,
  round: number,
  commitSha: string,
  treeSha: string,
  using: SettleWith,
): Promise<void> {
  const { runId, request, tracker } = ctx;
  const red = tracker.gates.filter(
    (record) => record.treeSha === treeSha && record.round === round && record.status !== 'passed' && !record.settled && !record.excused,
  );
  // Green rounds, and landings recorded before this, issue no new command.
  if (red.length === 0 || !patched(flakeEvidencePatch)) return;
  const policy = flakePolicy(request.recipes?.limits.gate);
  const unsettled = await excuseQuarantined(ctx, red, round, using);
  if (unsettled.length === 0 || !wantsEvidence(policy)) return;
  const base = await tracker.step(
    'capsule.treeOf',
    'capsule',
    () => using.host['capsule.treeOf']({ runId, sha: using.baseSha }),
    (value) => `base ${using.baseSha.slice(0, 12)}: tree ${value.treeSha.slice(0, 12)}`,
  );
  const baseEnvironment = using.environmentOnBase ? await using.environmentOnBase() : undefined;
  const redRound: RedRound = { pinned, gate, round, commitSha, treeSha, using, policy, baseTreeSha: base.treeSha, baseEnvironment };
  for (const record of unsettled) await settleByEvidence(ctx, redRound, record);
}

/** The red round being settled, and what its evidence runs need. */
interface RedRound {
  pinned: string;
  gate: GateFile;
  round: number;
  commitSha: string;
  treeSha: string;
  using: SettleWith;
  policy: ReturnType<typeof flakePolicy>;
  baseTreeSha: string;
  baseEnvironment: EnvironmentRef | undefined;
}

/** Excuses the reds of suites quarantined on the target; returns the reds still to settle. */
async function excuseQuarantined(ctx: LandingStepContext, red: GateSuiteResult[], round: number, using: SettleWith): Promise<GateSuiteResult[]> {
  const { repo, target } = ctx.request;
  const quarantines = await ctx.tracker.step(
    'quarantine.active',
    'capsule',
    () => using.local['quarantine.active']({ repo, target }),
    (value) => (value.length === 0 ? `none on ${target}` : `on ${target}: ${value.map((entry) => entry.suiteId).join(', ')}`),
  );
  const unsettled: GateSuiteResult[] = [];
  for (const record of red) {
    const quarantine = quarantines.find((entry) => entry.suiteId === record.suiteId);
    if (!quarantine) {
      unsettled.push(record);
      continue;
    }
    record.excused = { by: 'quarantine', until: quarantine.until };
    journalSettled(ctx, record, round);
  }
  return unsettled;
}

/** One red suite settled by its two runs side by side (again on the same tree, on the base), then excused or quarantined as the policy decides. */
async function settleByEvidence(ctx: LandingStepContext, on: RedRound, record: GateSuiteResult): Promise<void> {
  const { pinned, gate, round, using, policy } = on;
  const suite = gate.suites.find((entry) => entry.id === record.suiteId);
  if (!suite) return;
  const [again, onBase] = await Promise.all([
    sameTreeAgain(ctx, on, record, suite),
    evidenceRun(ctx, pinned, gate, suite, round, { on: 'base', commitSha: using.baseSha, treeSha: on.baseTreeSha }, on.baseEnvironment),
  ]);
  record.settled = settle(again.status, onBase.status);
  record.evidence = [again, onBase];
  const decision = decide(record.settled, policy);
  if (decision.quarantine && record.settled !== 'failed') {
    await quarantineSuite(ctx, on, record, suite, record.settled, [record.logRef, again.logRef, onBase.logRef]);
  } else if (decision.excusedBy) {
    record.excused = { by: decision.excusedBy };
  }
  journalSettled(ctx, record, round);
}

/**
 * The run again on the same tree. A red the gate cache answered is that tree's latest run (a green
 * re-run would have replaced it): it stands as the run again, and no container is burnt on a tree known red.
 */
function sameTreeAgain(ctx: LandingStepContext, on: RedRound, record: GateSuiteResult, suite: GateSuite): Promise<GateEvidenceRun> {
  const { pinned, gate, round, commitSha, treeSha } = on;
  if (record.cache !== 'hit') return evidenceRun(ctx, pinned, gate, suite, round, { on: 'same-tree', commitSha, treeSha }, on.using.environment);
  return Promise.resolve<GateEvidenceRun>({
    on: 'same-tree',
    commitSha,
    treeSha,
    status: record.status,
    exitCode: record.exitCode,
    logRef: record.logRef,
    durationMs: record.durationMs,
    cache: 'hit',
  });
}

/** Quarantines a suite on the target for the policy's time, and excuses its red until then. */
async function quarantineSuite(
  ctx: LandingStepContext,
  on: RedRound,
  record: GateSuiteResult,
  suite: GateSuite,
  settled: Exclude<GateSuiteResult['settled'], 'failed' | undefined>,
  logRefs: GateSuiteResult['logRef'][],
): Promise<void> {
  const { runId, request, tracker } = ctx;
  const { repo, target } = request;
  const forMs = parseDuration(on.policy.quarantineFor) ?? 7 * 24 * 3_600_000;
  const asked = { suiteId: suite.id, forMs, settled, landingId: runId, treeSha: on.treeSha, logRefs };
  const entry = await tracker.step(
    `quarantine.add:${suite.id}`,
    'capsule',
    () => on.using.local['quarantine.add']({ repo, target, request: asked }),
    (value) => `${value.suiteId} quarantined on ${target} until ${value.until}`,
  );
  record.excused = { by: 'quarantine', until: entry.until };
}

/** One evidence run of a suite: its own step and container (never the round's), recorded in the journal. */
async function evidenceRun(
  ctx: LandingStepContext,
  pinned: string,
  gate: GateFile,
  suite: GateSuite,
  round: number,
  run: Pick<GateEvidenceRun, 'on' | 'commitSha' | 'treeSha'>,
  environment?: EnvironmentRef,
): Promise<GateEvidenceRun> {
  const { runId, request, tracker } = ctx;
  const timeoutMs = suiteTimeoutMs(suite);
  const runner = proxyActivities<Activities>({
    ...gateSuite(timeoutMs),
    taskQueue: hostQueue(pinned),
    ...(ctx.hostLostAfterMs ? { scheduleToStartTimeout: ctx.hostLostAfterMs } : {}),
  });
  const result = await tracker.step(
    `gate.runSuite:${suite.id}#${round}.${run.on}`,
    'container',
    () =>
      runner['gate.runSuite']({
        runId,
        repo: request.repo,
        commitSha: run.commitSha,
        treeSha: run.treeSha,
        suite,
        image: gate.image ?? defaultRunnerImage,
        timeoutMs,
        round,
        evidence: run.on,
        ...(environment ? { environment } : {}),
        // The identical tree again must run: the cache holds the red this round just sealed.
        ...(run.on === 'same-tree' ? { reuse: false } : {}),
      }).then((value) => ((tracker.meters.containersRun -= value.cache === 'hit' ? 1 : 0), value)),
    (value) =>
      `${run.on === 'base' ? `on the base ${run.commitSha.slice(0, 12)}: ` : 'again: '}${value.status} (exit ${value.exitCode ?? 'none'})${value.cache ? `; GATE_CACHE=${value.cache}` : ''}`,
  );
  const { status, exitCode, logRef, durationMs, cache } = result;
  tracker.journal.record({ kind: 'gate', suiteId: suite.id, status, exitCode, treeSha: run.treeSha, round, logRef, durationMs, evidence: run.on });
  return { ...run, status, exitCode, logRef, durationMs, ...(cache ? { cache } : {}) };
}

/** What settled a red, in the live stream: a step of the journal's own (the record has it on the gate result). */
function journalSettled(ctx: LandingStepContext, record: GateSuiteResult, round: number): void {
  const { suiteId, settled, excused } = record;
  const what = settled
    ? `settled ${settled} by evidence (${(record.evidence ?? []).map((run) => `${run.on === 'base' ? 'on the base' : 'again'}: ${run.status}`).join(', ')})`
    : 'not settled';
  const why = excused
    ? excused.by === 'quarantine'
      ? `; quarantined on the target until ${excused.until}: does not block`
      : `; does not block (${excused.by})`
    : '; blocks';
  ctx.tracker.journal.record({ kind: 'step', name: `gate.settle:${suiteId}#${round}`, status: 'done', detail: `${what}${why}` });
}

/** How the excused reds of a verdict read in a summary: `test flaky (green when run again)`, … */
export function excusedText(verdict: Pick<GateVerdict, 'excused'> | undefined): string[] {
  return (verdict?.excused ?? []).map(({ suiteId, by }) =>
    by === 'retry'
      ? `${suiteId} flaky (red, then green when run again on the same tree)`
      : by === 'pre-existing'
        ? `${suiteId} red on the base too (pre-existing)`
        : `${suiteId} red but quarantined on the target`,
  );
}

/** A blocking red's settlement in a summary. */
export function settledText(settled: NonNullable<GateSuiteResult['settled']>): string {
  if (settled === 'failed') return 'red again on the same tree, green on the base: the landing broke it';
  return settled === 'flaky'
    ? "flaky: green when run again, but the recipe's limits.gate.flaky is fail"
    : "red on the base too, but the recipe's limits.gate.preExisting is fail";
}
