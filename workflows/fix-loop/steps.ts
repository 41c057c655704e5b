import { executeChild, proxyActivities, workflowInfo } from '@temporalio/workflow';
import { childRecord } from '../../core/search-attributes';
import type { ConversationRef, SessionOutcome, SessionRequest } from '../../core/session-types';
import type { RepoFacts } from '../../core/fix-types';
import { workflowTaskTimeout } from '../../core/timeouts';
import type { Activities } from '../../activities';
import { failureShape, sightingKey, type FailureSighting } from '../../policies/repeated-failure';
import { gateSuite } from '../activity-options';
import type { FixRecord } from './record';

/** A run of the repro: its exit code and log; when it failed, the end of its output and its sighting. */
export interface ReproRun {
  exitCode: number | null;
  logRef: string;
  tail: string;
  sighting?: FailureSighting;
}

/** How long reading make's database may take in its container. */
const groundingTimeoutMs = 60_000;

/**
 * Reads the workspace head for grounding: its files and package.json through git, make's database
 * (included makefiles too) from make itself in the runner container — nothing on the host runs
 * the repository's code.
 */
export async function readFacts(record: FixRecord): Promise<RepoFacts> {
  const { request, state, journal } = record;
  record.groundRounds += 1;
  const step = `ground#${record.groundRounds}`;
  journal.record({ kind: 'step', name: step, status: 'started' });
  const runner = proxyActivities<Activities>({ ...gateSuite(groundingTimeoutMs), ...record.hostOptions() });
  const facts = await runner['fix.groundingFacts']({
    runId: request.runId,
    repo: request.repo,
    image: request.reproImage ?? 'tarmac/runner:bookworm',
    step: `ground${request.label ? `-${request.label}` : ''}-r${record.groundRounds}`,
  });
  state.meters.capsulesRun += 1;
  if (facts.makefile) state.meters.containersRun += 1;
  const make = facts.make
    ? `make ${facts.make.source === 'make' ? 'database' : 'rules read as text'}: ${facts.make.targets.length} target(s) in ${facts.make.makefiles.join(', ')}`
    : 'no makefile';
  journal.record({ kind: 'step', name: step, status: 'done', detail: `read ${facts.read.join(', ') || 'no manifest'}; ${make}` });
  return facts;
}

/** The playbooks on a failure: line edits committed in the workspace by the capsule, or null. */
export async function tryPlaybooks(record: FixRecord, failure: ReproRun): Promise<{ playbookId: string; summary: string; files: string[] } | null> {
  const { request, state, journal } = record;
  state.meters.capsulesRun += 1;
  const applied = await record.host!['fix.applyPlaybook']({
    runId: request.runId,
    logRef: failure.logRef,
    make: record.facts?.make ?? null,
    ...(request.recipes ? { recipe: request.recipes.playbooks } : {}),
  });
  journal.record({ kind: 'step', name: 'playbook', status: 'done', detail: applied ? `${applied.playbookId}: ${applied.summary}` : 'no playbook applies' });
  if (applied) state.playbookUsed = applied.playbookId;
  return applied;
}

/** Runs the repro command on the workspace head, in the runner image (or the request's environment), as a gate suite would. */
export async function repro(record: FixRecord): Promise<ReproRun> {
  const { request, state, journal, reproCommand } = record;
  record.reproRounds += 1;
  const round = record.reproRounds;
  state.meters.containersRun += 1;
  const timeoutMs = request.reproTimeoutMs ?? 10 * 60_000;
  const runner = proxyActivities<Activities>({ ...gateSuite(timeoutMs), ...record.hostOptions() });
  const step = `repro#${round}`;
  journal.record({ kind: 'step', name: step, status: 'started' });
  const head = await record.host!['capsule.workspaceHead']({ runId: request.runId, since: record.baseSha });
  const result = await runner['gate.runSuite']({
    runId: request.runId,
    repo: request.repo,
    commitSha: head.headSha,
    treeSha: head.treeSha,
    suite: { id: request.label ? `repro-${request.label}` : 'repro', run: ['sh', '-c', reproCommand] },
    image: request.reproImage ?? 'tarmac/runner:bookworm',
    timeoutMs,
    round,
    // A repro is a fresh observation for the agent and the loop's sightings, never a reused one.
    reuse: false,
    // In the landing's environment, the repro is the gate suite as it ran.
    ...(request.environment ? { environment: request.environment } : {}),
  });
  state.reproExitCode = result.exitCode;
  journal.record({
    kind: 'step',
    name: step,
    status: result.exitCode === 0 ? 'done' : 'failed',
    detail: `\`${reproCommand}\` exited ${result.exitCode ?? 'none (timed out)'}; log ${result.logRef}`,
  });
  if (result.exitCode === 0) return { exitCode: 0, logRef: result.logRef, tail: '' };
  // A failure is a sighting: the same command failing the same way again is a limit of the loop.
  const tail = await record.host!['fix.logTail']({ logRef: result.logRef });
  const sighting = { command: reproCommand, exitCode: result.exitCode, shape: failureShape(tail) };
  const key = sightingKey(sighting);
  record.sightings[key] = (record.sightings[key] ?? 0) + 1;
  return { exitCode: result.exitCode, logRef: result.logRef, tail, sighting };
}

/** Commands the gateway saw fail in one agent round, with the most failures any attempt saw. */
export function roundToolFailures(round: SessionOutcome): { command: string; count: number }[] {
  const counts: Record<string, number> = {};
  for (const attempt of round.attempts)
    for (const { command, count } of attempt.gateway?.commandFailures ?? []) counts[command] = Math.max(counts[command] ?? 0, count);
  return Object.entries(counts).map(([command, count]) => ({ command, count }));
}

/** An agent session in the loop's workspace (a child workflow); its tool loop and spend join the record. */
export async function agent(record: FixRecord, prompt: string, name: string, continues?: ConversationRef): Promise<SessionOutcome> {
  const { request, state, routedTo } = record;
  const sessionId = request.label ? `${request.label}-${name}` : name;
  const harnessModel = (routedTo === 'architect' ? request.agents?.architect : request.agents?.implementer) ?? '';
  const result = (await executeChild('agentSession', {
    workflowId: `${request.runId}.${sessionId}`,
    taskQueue: workflowInfo().taskQueue,
    workflowTaskTimeout,
    ...childRecord('agent-session', {
      repo: request.repo,
      parent: workflowInfo().workflowId,
      summary: { role: routedTo, harnessModel: harnessModel || '(ladder)' },
    }),
    args: [
      {
        runId: request.runId,
        sessionId,
        role: routedTo,
        harnessModel,
        limits: { timeout: record.sessionTimeout },
        task: { prompt },
        workspace: { kind: 'run', repo: request.repo, hostId: record.hostId, baseSha: record.baseSha },
        ...(request.agents?.ladder ? { ladder: request.agents.ladder } : {}),
        reportTo: request.reportTo ?? workflowInfo().workflowId,
        ...record.sessionBudget(),
        ...(continues ? { continues } : {}),
        ...(request.recipes ? { recipes: request.recipes } : {}),
        ...(request.environment ? { environment: request.environment } : {}),
      } satisfies SessionRequest,
    ],
  })) as SessionOutcome;
  state.sessions.push({ sessionId, status: result.status, harnessModel: result.harnessModel, attempts: result.attempts.length });
  // The gateway's record of the agent's tool loop: failures per command, breaker trips.
  for (const attempt of result.attempts) {
    for (const { command, count } of attempt.gateway?.commandFailures ?? [])
      state.commandFailures[command] = Math.max(state.commandFailures[command] ?? 0, count);
    if (attempt.gateway?.circuitBreakerTriggered) state.circuitBreakerTriggered = true;
  }
  state.meters.agentSessions += result.meters.sessionsSpawned;
  state.meters.inputTokens += result.meters.inputTokens;
  state.meters.outputTokens += result.meters.outputTokens;
  state.meters.costUsd += result.meters.costUsd;
  return result;
}
