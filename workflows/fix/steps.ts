import { executeChild, proxyActivities, workflowInfo } from '@temporalio/workflow';
import { hostQueue } from '../../core/queues';
import { childRecord } from '../../core/search-attributes';
import type { ConversationRef, SessionOutcome, SessionRequest } from '../../core/session-types';
import type { Activities } from '../../activities';
import { gateSuite } from '../activity-options';
import type { FixRecord } from './record';

/** Runs the repro command on the workspace head, in the runner image, as a gate suite would. */
export async function repro(record: FixRecord): Promise<{ exitCode: number | null; logRef: string }> {
  const { request, state, journal, reproCommand } = record;
  record.reproRounds += 1;
  const round = record.reproRounds;
  state.meters.containersRun += 1;
  const timeoutMs = request.reproTimeoutMs ?? 10 * 60_000;
  const runner = proxyActivities<Activities>({ ...gateSuite(timeoutMs), taskQueue: hostQueue(record.hostId) });
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
  });
  state.reproExitCode = result.exitCode;
  journal.record({ kind: 'step', name: step, status: result.exitCode === 0 ? 'done' : 'failed', detail: `\`${reproCommand}\` exited ${result.exitCode ?? 'none (timed out)'}; log ${result.logRef}` });
  return { exitCode: result.exitCode, logRef: result.logRef };
}

/** An agent session in the loop's workspace (a child workflow); its tool loop and spend join the record. */
export async function agent(record: FixRecord, prompt: string, name: string, continues?: ConversationRef): Promise<SessionOutcome> {
  const { request, state, routedTo } = record;
  const sessionId = request.label ? `${request.label}-${name}` : name;
  const harnessModel = (routedTo === 'architect' ? request.agents?.architect : request.agents?.implementer) ?? '';
  const result = (await executeChild('agentSession', {
    workflowId: `${request.runId}.${sessionId}`,
    taskQueue: workflowInfo().taskQueue,
    ...childRecord('agent-session', { repo: request.repo, parent: workflowInfo().workflowId, summary: { role: routedTo, harnessModel: harnessModel || '(ladder)' } }),
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
      } satisfies SessionRequest,
    ],
  })) as SessionOutcome;
  state.sessions.push({ sessionId, status: result.status, harnessModel: result.harnessModel, attempts: result.attempts.length });
  // The gateway's record of the agent's tool loop: failures per command, breaker trips.
  for (const attempt of result.attempts) {
    for (const { command, count } of attempt.gateway?.commandFailures ?? []) state.commandFailures[command] = Math.max(state.commandFailures[command] ?? 0, count);
    if (attempt.gateway?.circuitBreakerTriggered) state.circuitBreakerTriggered = true;
  }
  state.meters.agentSessions += result.meters.sessionsSpawned;
  state.meters.inputTokens += result.meters.inputTokens;
  state.meters.outputTokens += result.meters.outputTokens;
  state.meters.costUsd += result.meters.costUsd;
  return result;
}
