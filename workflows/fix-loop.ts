import { CancellationScope, executeChild, isCancellation, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { FixOutcome, FixRequest } from '../core/fix-types';
import { parseDuration } from '../core/duration';
import { hostQueue } from '../core/queues';
import type { ConversationRef, SessionOutcome, SessionRequest } from '../core/session-types';
import { capsule, gateSuite } from './activity-options';
import { eventsQuery, fixLoopStatusQuery, runEventSignal } from '../core/messages';
import { budgetExhausted, budgetLeft, type BudgetLimits } from '../policies/budget';
import { classifyIntent, roleFor, type Intent } from '../policies/intent';
import { RunJournal } from './run-journal';
import { childRecord } from '../core/search-attributes';

const defaultRepro: Record<Intent, string> = {
  'boot-fix': 'make up',
  'build-fix': 'make build',
  'test-fix': 'make test',
  'other-fix': 'make test',
  'design-question': '',
};

/**
 * fixLoop: route by intent → Discover (run the repro) → Playbook (a known signature:
 * deterministic patch) → Edit (agent session) → Verify (re-run the repro) → Repair
 * (≤ maxRepairs) → Outcome. Every exit path returns and stores an outcome with its
 * metadata; the fixes go to a run-owned branch, ready to be landed.
 */
export async function fixLoop(request: FixRequest): Promise<FixOutcome> {
  const { taskQueue } = workflowInfo();
  const started = Date.now();
  const label = request.label;
  const intent = classifyIntent(request.request);
  const routedTo = roleFor(intent);
  const reproCommand = request.reproCommand ?? defaultRepro[intent];
  const fixBranchName = `tarmac/fix/${request.runId}`;
  const state = {
    phase: 'discover',
    reproExitCode: null as number | null,
    repairAttempts: 0,
    verifyFailed: false,
    playbookUsed: null as string | null,
    commandFailures: {} as Record<string, number>,
    circuitBreakerTriggered: false,
    sessions: [] as FixOutcome['sessions'],
    meters: { capsulesRun: 0, containersRun: 0, agentSessions: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, wallTimeMs: 0 },
  };
  const done: { outcome?: FixOutcome } = {};
  setHandler(fixLoopStatusQuery, () => ({ ...state, intent, routedTo, reproCommand, ...(done.outcome ? { outcome: done.outcome } : {}) }));
  // Its own live events (GET /v1/runs/:id/events): phases, repro runs, its sessions, the outcome.
  const journal = new RunJournal();
  setHandler(eventsQuery, ({ after, limit } = {}) => journal.page(after, limit));
  setHandler(runEventSignal, ({ key, ...event }) => journal.record(event, key));
  const enter = (phase: string) => {
    state.phase = phase;
    journal.record({ kind: 'phase', phase });
  };

  const shared = proxyActivities<Activities>({ ...capsule, taskQueue });
  let host: Activities | undefined;
  let hostId = '';
  let baseSha = '';
  let round = 0;
  let sessionTimeout = '20m';

  const finish = (kind: FixOutcome['outcome'], summary: string, failureType: string | null = null): Omit<FixOutcome, 'filesChanged' | 'fixBranch'> => ({
    outcome: kind,
    summary,
    runId: request.runId,
    intent,
    routedTo,
    reproCommand,
    reproExitCode: state.reproExitCode,
    repairAttempts: state.repairAttempts,
    verifyFailed: state.verifyFailed,
    playbookUsed: state.playbookUsed,
    commandFailures: Object.entries(state.commandFailures).map(([command, count]) => ({ command, count })),
    circuitBreakerTriggered: state.circuitBreakerTriggered,
    failureType,
    sessions: [...state.sessions],
    meters: { ...state.meters, wallTimeMs: Date.now() - started },
  });

  async function repro(): Promise<{ exitCode: number | null; logRef: string }> {
    round += 1;
    state.meters.containersRun += 1;
    const timeoutMs = request.reproTimeoutMs ?? 10 * 60_000;
    const runner = proxyActivities<Activities>({ ...gateSuite(timeoutMs), taskQueue: hostQueue(hostId) });
    const step = `repro#${round}`;
    journal.record({ kind: 'step', name: step, status: 'started' });
    const head = await host!['capsule.workspaceHead']({ runId: request.runId, since: baseSha });
    const result = await runner['gate.runSuite']({
      runId: request.runId,
      repo: request.repo,
      commitSha: head.headSha,
      treeSha: head.treeSha,
      suite: { id: label ? `repro-${label}` : 'repro', run: ['sh', '-c', reproCommand] },
      image: request.reproImage ?? 'tarmac/runner:bookworm',
      timeoutMs,
      round,
    });
    state.reproExitCode = result.exitCode;
    journal.record({ kind: 'step', name: step, status: result.exitCode === 0 ? 'done' : 'failed', detail: `\`${reproCommand}\` exited ${result.exitCode ?? 'none (timed out)'}; log ${result.logRef}` });
    return { exitCode: result.exitCode, logRef: result.logRef };
  }

  /** The loop's budget as limits, when it was given one in full (a landing gives what it has left). */
  function loopBudget(): { limits: BudgetLimits; onExhausted: 'pause' | 'stop' } | undefined {
    const budget = request.budget;
    if (!budget || budget.tokens === undefined || budget.costUsd === undefined || budget.sessions === undefined || budget.wall === undefined) return undefined;
    return { limits: { tokens: budget.tokens, costUsd: budget.costUsd, sessions: budget.sessions, wallMs: parseDuration(budget.wall) ?? 8 * 3_600_000 }, onExhausted: budget.onExhausted ?? 'stop' };
  }
  const loopSpend = () => ({ ...state.meters, sessionsSpawned: state.meters.agentSessions, wallTimeMs: Date.now() - started });

  /** The loop's sessions share its budget: each gets what the earlier ones left. */
  function sessionBudget(): { budget?: SessionRequest['budget'] } {
    const whole = loopBudget();
    if (!whole) return request.budget ? { budget: request.budget } : {};
    return { budget: { ...budgetLeft(loopSpend(), whole.limits), onExhausted: whole.onExhausted } };
  }

  async function agent(prompt: string, name: string, continues?: ConversationRef): Promise<SessionOutcome> {
    const sessionId = label ? `${label}-${name}` : name;
    const harnessModel = (routedTo === 'architect' ? request.agents?.architect : request.agents?.implementer) ?? '';
    const result = (await executeChild('agentSession', {
      workflowId: `${request.runId}.${sessionId}`,
      taskQueue,
      ...childRecord('agent-session', { repo: request.repo, parent: workflowInfo().workflowId, summary: { role: routedTo, harnessModel: harnessModel || '(ladder)' } }),
      args: [
        {
          runId: request.runId,
          sessionId,
          role: routedTo,
          harnessModel,
          limits: { timeout: sessionTimeout },
          task: {
            prompt,
            ...(request.agents?.scriptEdits ? { edits: request.agents.scriptEdits } : {}),
            ...(request.agents?.scriptTask ?? {}),
            ...(request.agents?.scriptSlowMs ? { slowMs: request.agents.scriptSlowMs } : {}),
            ...(request.agents?.scriptUsage ? { reportUsage: request.agents.scriptUsage } : {}),
          },
          workspace: { kind: 'run', repo: request.repo, hostId, baseSha },
          ...(request.agents?.ladder ? { ladder: request.agents.ladder } : {}),
          reportTo: request.reportTo ?? workflowInfo().workflowId,
          ...sessionBudget(),
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

  async function loop(): Promise<Omit<FixOutcome, 'filesChanged' | 'fixBranch'>> {
    state.meters.capsulesRun += 2;
    const limits = await shared['fix.limits']();
    sessionTimeout = limits.sessionTimeout;
    ({ hostId, baseSha } = request.workspace ?? (await shared['capsule.prepareSessionWorkspace']({ runId: request.runId, repo: request.repo, ref: request.branch })));
    host = proxyActivities<Activities>({ ...capsule, taskQueue: hostQueue(hostId) });

    if (routedTo === 'architect') {
      enter('answer');
      const answer = await agent(request.request, 'architect-1');
      if (answer.status === 'agent-unavailable') return finish('agent-unavailable', answer.summary, 'agent-unavailable');
      return finish(answer.status === 'delivered' ? 'answered' : 'failed', answer.result?.summary ?? answer.summary, answer.status === 'delivered' ? null : 'agent-failed');
    }

    enter('discover');
    let failure = await repro();
    if (failure.exitCode === 0) return finish('nothing-to-fix', `\`${reproCommand}\` already exits 0; nothing to fix`);

    enter('playbook');
    state.meters.capsulesRun += 1;
    const playbook = await host['fix.applyPlaybook']({ runId: request.runId, logRef: failure.logRef });
    if (playbook) {
      state.playbookUsed = playbook.playbookId;
      enter('verify');
      failure = await repro();
      if (failure.exitCode === 0) return finish('fixed', `playbook ${playbook.playbookId}: ${playbook.summary}; \`${reproCommand}\` now exits 0`);
      state.verifyFailed = true;
    }

    const maxRepairs = request.maxRepairs ?? limits.maxRepairs;
    let idleRounds = 0;
    let previous: SessionOutcome | undefined;
    for (let attempt = 0; attempt <= maxRepairs; attempt += 1) {
      enter(attempt === 0 ? 'edit' : 'repair');
      if (attempt > 0) state.repairAttempts += 1;
      // A spent budget ends the loop before another agent starts (what it fixed so far stays).
      const whole = loopBudget();
      const spent = whole ? budgetExhausted(loopSpend(), whole.limits) : undefined;
      if (spent) return finish('exhausted', `the budget is spent (${spent}) after ${attempt} agent round(s); \`${reproCommand}\` still exits ${failure.exitCode}`, 'budget-exhausted');
      const tail = await host['fix.logTail']({ logRef: failure.logRef });
      const before = await host['capsule.workspaceHead']({ runId: request.runId, since: baseSha });
      // Reuse first: a repair is a follow-up message to the agent of the round before (when it
      // delivered), in its conversation; the first round, or one after a dead session, starts afresh.
      const earlier = previous?.status === 'delivered' ? previous.attempts.at(-1) : undefined;
      const continues = earlier ? { sessionId: previous!.sessionId, attempt: earlier.attempt, harnessModel: earlier.harnessModel } : undefined;
      const prompt = continues
        ? [`Your change did not fix it: \`${reproCommand}\` still fails (exit ${failure.exitCode}). Its output ends with:`, '```', tail, '```', 'Fix the cause in the source (not the tests) and commit.'].join('\n')
        : [`Request: ${request.request}`, `The command \`${reproCommand}\` fails (exit ${failure.exitCode}). Its output ends with:`, '```', tail, '```', 'Fix the cause in the source (not the tests) and commit.'].join('\n');
      previous = await agent(prompt, `${routedTo}-${attempt + 1}`, continues);
      // No agent could start: that is the answer, not a round that "changed nothing" (never thrashing).
      if (previous.status === 'agent-unavailable') return finish('agent-unavailable', `${previous.summary}; \`${reproCommand}\` still exits ${failure.exitCode}`, 'agent-unavailable');
      const after = await host['capsule.workspaceHead']({ runId: request.runId, since: before.headSha });
      // A round that changed nothing on disk is thrashing; two of them end the loop.
      if (after.commitsSince === 0) {
        idleRounds += 1;
        if (idleRounds >= 2) return finish('thrashing', `${idleRounds} rounds changed nothing on disk; \`${reproCommand}\` still exits ${failure.exitCode}`, 'thrashing');
        continue;
      }
      enter('verify');
      failure = await repro();
      if (failure.exitCode === 0) return finish('fixed', `\`${reproCommand}\` exits 0 after ${attempt + 1} agent round(s)`);
      state.verifyFailed = true;
    }
    return finish('exhausted', `\`${reproCommand}\` still exits ${failure.exitCode} after ${maxRepairs} repair(s)`, 'repairs-exhausted');
  }

  let partial: Omit<FixOutcome, 'filesChanged' | 'fixBranch'>;
  try {
    partial = await loop();
  } catch (error) {
    const message = error instanceof Error ? ((error as { cause?: Error }).cause?.message ?? error.message) : String(error);
    partial = isCancellation(error) ? finish('cancelled', `cancelled in phase ${state.phase}`, 'cancelled') : finish('failed', `failed in phase ${state.phase}: ${message}`, 'error');
  }
  // The finale: publish the fixes (if any) to the run-owned branch, clean up, store the outcome.
  // Inside a landing the fixes stay in the landing's workspace, which the landing gates and cleans.
  done.outcome = await CancellationScope.nonCancellable(async () => {
    let filesChanged: string[] = [];
    let fixBranch: string | null = null;
    if (request.workspace) {
      if (host) filesChanged = await host['capsule.changedFiles']({ runId: request.runId, targetSha: baseSha }).catch(() => [] as string[]);
      return { ...partial, filesChanged, fixBranch };
    }
    if (host && baseSha) {
      const published = await host['fix.publishFixes']({ runId: request.runId, repo: request.repo, baseSha, branch: fixBranchName }).catch(() => undefined);
      filesChanged = published?.filesChanged ?? [];
      if (published?.pushed) fixBranch = fixBranchName;
      await host['capsule.cleanupRun']({ runId: request.runId }).catch(() => undefined);
    }
    const record: FixOutcome = { ...partial, filesChanged, fixBranch };
    if (host) await host['capsule.recordOutcome']({ outcome: record as never, name: 'fix-outcome' }).catch(() => undefined);
    return record;
  });
  journal.record({ kind: 'outcome', status: done.outcome.outcome, summary: done.outcome.summary });
  journal.finished = true;
  return done.outcome;
}
