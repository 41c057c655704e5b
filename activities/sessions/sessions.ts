import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Context, type ApplicationFailure } from '@temporalio/activity';
import { Value } from '@sinclair/typebox/value';
import type Docker from 'dockerode';
import { failure, FailureCode } from '../../core/failures';
import type { ReportedRunEvent, SessionEventType } from '../../core/events';
import { fieldName } from '../../core/gate-file';
import { parseDuration } from '../../core/duration';
import { checkHarnessModel, splitHarnessModel } from '../../core/harness-models';
import { adapters, modelProviderOf } from '../../core/harnesses';
import { containerPaths } from '../../core/harnesses/types';
import { BudgetSchema, SessionLimitsSchema, type Budget, type Harness, type RecipeSnapshot, type SessionLimits } from '../../core/recipe-schemas';
import { runRecipes } from '../../core/node/recipes';
import { checkSessionResult, readResultBlock, resultFence, type SessionResult } from '../../core/session-result';
import { resultContract } from '../../core/harnesses/result-contract';
import type { ResolvedPanel } from '../../core/review-types';
import type { ConversationRef, SessionAttemptReport, SessionRole, SessionTask } from '../../core/session-types';
import { ConfinedPathError, readFileNoFollow } from '../stores/confined-fs';
import { containerStdout, labelKeys, runStepContainer } from '../containers/containers';
import { commandContainer, type CommandContainer } from '../containers/command-container';
import type { EnvironmentRef } from '../../core/environment-types';
import { runEventSignal } from '../../core/messages';
import { loadScriptScenario } from './script-scenarios';
import { startGateway } from '../gateways/tool-gateway';
import { startModelGateway, type ModelGatewayHandle } from '../gateways/model-gateway';
import { defaultModelUpstreams } from '../gateways/model-protocol';
import { availabilityFacts } from './agent-availability';
import { agentAvailability, providerKeys, runnableLadder } from '../../core/agent-availability';
import type { ModelBudgetLeft } from '../../policies/model-budget';
import { containerUser, handToContainerUser } from '../git/git';
import { advanceWorkspace, attemptWorkspace, commitsOver, importExport, prepareAttemptCopy, prepareConversation, rebaseStopped, runExport, type AttemptExport, type AttemptWorkspace } from './session-workspace';
import { dataRef, mirrorPath, recordInManifest, runPaths, writeFileAtomic } from '../stores/run-store';

export interface SessionActivityDeps {
  dataDir: string;
  hostId: string;
  docker: Docker;
  /** Where the live recipes are (read only for a run started before runs carried their snapshot); default the repository's `recipes/`. */
  recipesDir?: string;
  /** Where harness secrets come from (model API keys); default the worker's environment. They stay in the worker: the model gateway adds them. */
  secrets?: NodeJS.ProcessEnv;
  /** Where the model gateway forwards, per protocol (config `modelUpstreams`); default the providers' public APIs. */
  modelUpstreams?: { anthropic: string; openai: string };
  /** The script harness's scenarios (config `scriptScenariosDir`, a development and test setting); default none. */
  scriptScenariosDir?: string;
}


export interface ValidateDispatchInput {
  /** harness#model of the first attempt; empty → the ladder's first rung. */
  harnessModel: string;
  ladder?: string[];
  limits?: Partial<SessionLimits>;
  budget?: Partial<Budget>;
  /** The run's recipe snapshot (SessionRequest.recipes). */
  recipes?: RecipeSnapshot;
}

export interface DispatchPlan {
  recipeVersion: string;
  /** The first attempt's harness#model (the request's, or the ladder's first rung). */
  harnessModel: string;
  ladder: string[];
  limits: SessionLimits;
  budget: Budget;
  /** Only the harnesses this session may use (first model and ladder), without secrets. */
  harnesses: Record<string, Pick<Harness, 'image' | 'adapter' | 'secrets'>>;
  /**
   * Set when the request left the agent to the defaults and no rung of the recipe ladder can run
   * on this worker (the ladder is then empty): what each rung lacks, the missing image or key named.
   */
  unavailable?: string;
}

export interface RunSessionInput {
  runId: string;
  sessionId: string;
  attempt: number;
  role: SessionRole;
  harnessModel: string;
  harness: Pick<Harness, 'image' | 'adapter' | 'secrets'>;
  task: SessionTask;
  limits: SessionLimits;
  repo: string;
  baseSha: string;
  /** Workflow id whose event journal hears `spawned` / `reattached` / `first-turn` as they happen. */
  reportTo?: string;
  /**
   * What this attempt may still spend on model requests (the run budget minus the meters so
   * far); the model gateway refuses a request once it is spent. Default: unlimited.
   */
  modelBudget?: ModelBudgetLeft;
  /** The earlier session this one follows up (SessionRequest.continues). */
  continues?: ConversationRef;
  /** The run's recipe snapshot: the tool gateway's grounding rules and tool-call limit, the model gateway's prices. */
  recipes?: RecipeSnapshot;
  /** The repository environment `run_command` runs in (SessionRequest.environment); none: the session container. */
  environment?: EnvironmentRef;
}

/** A conversation's UUID, the same on every retry of the attempt (Claude Code's --session-id). */
export function conversationUuid(runId: string, sessionId: string, attempt: number): string {
  const hex = createHash('sha256').update(`${runId}/${sessionId}/a${attempt}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The report of an attempt that started nothing: this worker cannot run its agent. */
function unavailableReport(input: RunSessionInput, hostId: string, reason: string): SessionAttemptReport {
  return {
    attempt: input.attempt,
    harnessModel: input.harnessModel,
    containerId: '',
    exitCode: null,
    oomKilled: false,
    timedOut: false,
    reattached: false,
    foundFinished: false,
    durationMs: 0,
    sawFirstTurn: false,
    resultProblem: reason,
    commitsAdded: 0,
    headSha: input.baseSha,
    logRef: '',
    hostId,
    unavailable: reason,
  };
}

/**
 * Reports a session's lifecycle to the journal of the run it works for, as it happens.
 * Best effort: the journal is a view; a lost report never fails the session.
 */
function eventReporter(reportTo: string | undefined, session: { sessionId: string; role: string; attempt: number; harnessModel: string }) {
  // Taken now, inside the activity: the callbacks below run from Docker stream events.
  const client = reportTo ? Context.current().client : undefined;
  return (type: SessionEventType, containerId: string): void => {
    if (!reportTo || !client) return;
    const event: ReportedRunEvent = { kind: 'session', type, ...session, key: `${session.sessionId}:a${session.attempt}:${type}:${containerId}` };
    client.workflow
      .getHandle(reportTo)
      .signal(runEventSignal, event)
      .catch(() => undefined);
  };
}

/** The container's loopback port of the model forwarder (images/shared/tarmac-forward). */
const modelPort = 8417;

/** A result file larger than this is not a result. */
const maxResultBytes = 1024 * 1024;

/** The marker script agents print when they reach their first turn. */
const firstTurnMarker = '[tarmac] first-turn';

function invalidRequest(message: string): ApplicationFailure {
  return failure(FailureCode.invalidRequest, message);
}

export function createSessionActivities({ dataDir, hostId, docker, recipesDir, secrets = process.env, modelUpstreams = defaultModelUpstreams, scriptScenariosDir }: SessionActivityDeps) {
  /**
   * Brings an attempt's commits into the worker-owned run workspace: the export
   * container bundles them, the worker fetches the bundle, and a head that builds on the
   * workspace's head advances it (a resolver's head waits for the rebase capsule).
   */
  async function collectCommits(input: { runId: string; step: string; image: string; user: string; workspace: AttemptWorkspace; baseSha: string; objectDirs: string[]; attempt: number; sessionId: string; logFile: string }): Promise<AttemptExport> {
    const worktree = runPaths(dataDir, input.runId).worktree;
    const exported = await runExport({ docker, runId: input.runId, step: input.step, image: input.image, user: input.user, paths: input.workspace, baseSha: input.baseSha, objectDirs: input.objectDirs, logFile: input.logFile });
    if (exported.exitCode !== 0) return { headSha: null, state: 'clean', problem: `the export of the agent's commits exited ${exported.exitCode ?? '(timeout)'}` };
    const imported = await importExport(worktree, input.workspace, input.baseSha, `refs/tarmac/sessions/${input.sessionId}/a${input.attempt}`);
    if (imported.headSha && imported.state === 'clean' && (await commitsOver(worktree, input.baseSha, imported.headSha)) > 0 && !(await rebaseStopped(worktree))) {
      await advanceWorkspace(worktree, imported.headSha);
    }
    return imported;
  }

  return {
    /**
     * Dispatch validation: every harness#model (the first and the whole ladder) is
     * checked against the registry, and the limits and budget against their schemas,
     * before any container starts. Unknown models fail with the nearest known names.
     */
    validateDispatch: async (input: ValidateDispatchInput): Promise<DispatchPlan> => {
      const recipes = runRecipes(input.recipes, recipesDir);
      const names = [...(input.harnessModel ? [{ field: 'harnessModel', spec: input.harnessModel }] : []), ...(input.ladder ?? recipes.ladder).map((spec, index) => ({ field: `ladder[${index}]`, spec }))];
      for (const { field, spec } of names) {
        const check = checkHarnessModel(spec, recipes.harnesses);
        if (!check.ok) {
          throw failure(FailureCode.unknownModel, `${field}: ${check.message}`, { field, nearest: check.nearest });
        }
      }
      const limits = { ...recipes.limits.session, ...(input.limits ?? {}) };
      const limitError = Value.Errors(SessionLimitsSchema, limits).First();
      if (limitError) throw invalidRequest(`limits.${fieldName(limitError.path)} ${limitError.message.toLowerCase()}`);
      const budget = { ...recipes.limits.budget, ...(input.budget ?? {}) };
      const budgetError = Value.Errors(BudgetSchema, budget).First();
      if (budgetError) throw invalidRequest(`budget.${fieldName(budgetError.path)} ${budgetError.message.toLowerCase()}`);
      // The default ladder of this install is the recipe's rungs this worker can run (image built,
      // key set); a ladder the request names is taken as it is (the API refused what no worker can run).
      let ladder = input.ladder ?? recipes.ladder;
      let unavailable: string | undefined;
      if (!input.ladder) {
        const facts = await availabilityFacts({ docker, secrets, modelUpstreams }, recipes.harnesses);
        ({ ladder, reason: unavailable } = runnableLadder(ladder, (spec) => agentAvailability(spec, recipes.harnesses, facts)));
      }
      const harnessModel = input.harnessModel || ladder[0] || '';
      const harnesses: DispatchPlan['harnesses'] = {};
      for (const spec of [harnessModel, ...ladder].filter(Boolean)) {
        const name = splitHarnessModel(spec)!.harness;
        const { image, adapter, secrets: secretNames } = recipes.harnesses[name]!;
        harnesses[name] = { image, adapter, secrets: secretNames };
      }
      return { recipeVersion: recipes.version, harnessModel, ladder, limits, budget, harnesses, ...(harnessModel ? {} : { unavailable: unavailable ?? 'no agent is configured' }) };
    },

    /** A recipe panel by name, its reviewers checked against the registry. */
    resolvePanel: async ({ name, quorum, recipes: snapshot }: { name: string; quorum?: number; recipes?: RecipeSnapshot }): Promise<ResolvedPanel> => {
      const recipes = runRecipes(snapshot, recipesDir);
      const panel = recipes.panels[name];
      if (!panel) {
        throw failure(FailureCode.invalidRequest, `review.panel: unknown panel "${name}" (known: ${Object.keys(recipes.panels).join(', ')})`);
      }
      const effective = quorum ?? panel.quorum;
      if (effective > panel.reviewers.length) throw invalidRequest(`review.quorum: ${effective} is more than the ${panel.reviewers.length} reviewer(s) of panel "${name}"`);
      return { ...panel, quorum: effective, name };
    },

    /**
     * Runs one attempt of an agent session in its container, or reattaches to it,
     * and reports everything observable: exit, OOM, timeout, first turn, result
     * validity, commits added. It judges nothing; the workflow classifies.
     */
    runSession: async (input: RunSessionInput): Promise<SessionAttemptReport> => {
      const { runId, sessionId, attempt, role, harnessModel, harness, task, limits, repo, baseSha } = input;
      const recipes = runRecipes(input.recipes, recipesDir);
      const { model, harness: harnessName } = splitHarnessModel(harnessModel)!;
      const adapter = adapters[harness.adapter];
      const paths = runPaths(dataDir, runId);
      const step = `session-${sessionId}-a${attempt}`;
      const dir = join(paths.runDir, 'sessions', sessionId, `a${attempt}`);
      const outDir = join(dir, 'out');
      const mirror = mirrorPath(dataDir, repo);
      const found = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${labelKeys.run}=${runId}`, `${labelKeys.step}=${step}`] }) });
      if (found.length === 0) {
        // An agent this worker cannot run is said so at once, with what is missing; nothing is started.
        const facts = await availabilityFacts({ docker, secrets, modelUpstreams }, { [harnessName]: harness });
        const availability = agentAvailability(harnessModel, { [harnessName]: harness }, facts);
        if (!availability.ok) return unavailableReport(input, hostId, availability.reason);
      }
      // A script model's scenario is this worker's data (never the request's): read here, merged into the task.
      const scenario = found.length === 0 && harness.adapter === 'script' ? await loadScriptScenario(scriptScenariosDir, model) : { ok: true as const, scenario: {} };
      if (!scenario.ok) return unavailableReport(input, hostId, `${harnessModel} cannot run: ${scenario.reason}`);
      if (found.length === 0) {
        await recordInManifest(paths.manifest, { runId, repo, mirror, hostId, createdAt: new Date().toISOString(), containerRunLabel: runId }, { dirs: [attemptWorkspace(dir).copy, attemptWorkspace(dir).exportDir] });
        await mkdir(outDir, { recursive: true });
        await writeFile(join(dir, 'task.json'), `${JSON.stringify({ role, model, harness: harnessName, attempt, ...scenario.scenario, ...task }, null, 2)}\n`);
        // CLI agents hand back findings, questions and drops in a fenced block of their last message.
        await writeFile(join(dir, 'prompt.md'), `${task.prompt}\n${adapter.output === 'stdout' ? `${resultContract(role)}\n` : ''}`);
        await handToContainerUser(outDir);
      }
      // The agent works in a copy of the run workspace of its own; the workspace stays the worker's.
      const workspace = await prepareAttemptCopy(paths.worktree, dir, input.environment?.products);
      // The CLI's own state, per attempt; a follow-up on the same harness starts from a copy of the
      // conversation it continues (the earlier one stays as it was), and resumes it.
      const resumes = input.continues && adapter.resumable && splitHarnessModel(input.continues.harnessModel)?.harness === harnessName ? input.continues : undefined;
      const conversation = await prepareConversation(dir, resumes ? join(paths.runDir, 'sessions', resumes.sessionId, `a${resumes.attempt}`) : undefined);
      const conversationRef = resumes
        ? { id: conversationUuid(runId, resumes.sessionId, resumes.attempt), resume: true }
        : { id: conversationUuid(runId, sessionId, attempt), resume: false };
      const user = containerUser();
      // The copy reads the mirror's objects through alternates; agents can read them, not write them.
      const objectDirs = [join(mirror, 'objects')];
      const sessionEnv = [
        'HOME=/tmp',
        'GIT_AUTHOR_NAME=tarmac-agent',
        'GIT_AUTHOR_EMAIL=agent@tarmac.invalid',
        'GIT_COMMITTER_NAME=tarmac-agent',
        'GIT_COMMITTER_EMAIL=agent@tarmac.invalid',
      ];
      const memoryBytes = limits.memoryMb * 1024 * 1024;
      const nanoCpus = Math.round(limits.cpus * 1e9);
      // In a repository environment, run_command runs in a command container of it, on this copy (command-container.ts).
      const commands: CommandContainer | undefined = input.environment
        ? commandContainer({ docker, dataDir, runId, sessionStep: step, labels: { 'tarmac.session': sessionId, 'tarmac.attempt': String(attempt) }, environment: input.environment, workspace: workspace.copy, readOnly: role === 'reviewer', objectDirs, user: `${user.uid}:${user.gid}`, env: sessionEnv, memoryBytes, nanoCpus, pidsLimit: limits.pids, logFile: join(paths.logs, `${step}-command.log`) })
        : undefined;
      // Running before the agent starts: its first command does not wait for it, and an environment that cannot run fails the attempt now.
      await commands?.ensure();
      // The session's tool gateway: started before the container, so its socket is there when the agent starts.
      let containerId: string | undefined;
      const gatewayDir = join(paths.runDir, 'sessions', sessionId, 'gateway');
      const gateway = await startGateway({
        dir: gatewayDir,
        workspace: workspace.copy,
        docker,
        containerId: () => containerId,
        ...(commands ? { commandContainer: commands.ensure } : {}),
        user: `${user.uid}:${user.gid}`,
        rules: recipes.playbooks.grounding,
        maxToolCalls: recipes.playbooks.limits.maxToolIterations,
        readOnly: role === 'reviewer',
      });
      // A CLI agent's only way to a model: its model gateway, per attempt, whose socket sits next to the
      // tool gateway's in the one mounted directory. The key stays here; the container gets a placeholder.
      const provider = modelProviderOf(harness.adapter, model);
      let modelGateway: ModelGatewayHandle | undefined;
      if (provider) {
        try {
          modelGateway = await startModelGateway({
            dir: join(dir, 'model-gateway'),
            socketKey: gatewayDir,
            provider,
            upstream: modelUpstreams[provider],
            apiKey: secrets[providerKeys[provider]] || undefined,
            budget: { left: input.modelBudget ?? { tokens: Number.MAX_SAFE_INTEGER, costUsd: Number.MAX_SAFE_INTEGER } },
            pricing: recipes.pricing,
          });
        } catch (error) {
          await gateway.close();
          throw error;
        }
      }
      const report = eventReporter(input.reportTo, { sessionId, role, attempt, harnessModel });
      const result = await runStepContainer(docker, {
        onContainer: (id) => {
          containerId = id;
        },
        onRunning: ({ containerId: id, reattached }) => report(reattached ? 'reattached' : 'spawned', id),
        onFirstOutput: () => report('first-turn', containerId ?? ''),
        labels: {
          [labelKeys.run]: runId,
          [labelKeys.step]: step,
          [labelKeys.role]: role,
          'tarmac.session': sessionId,
          'tarmac.harness': harnessName,
          'tarmac.model': model,
          'tarmac.attempt': String(attempt),
        },
        image: harness.image,
        cmd: adapter.command(model, conversationRef),
        user: `${user.uid}:${user.gid}`,
        env: [
          ...sessionEnv,
          `TARMAC_ATTEMPT=${attempt}`,
          `TARMAC_MODEL=${model}`,
          `TARMAC_ROLE=${role}`,
          `TARMAC_SESSION=${sessionId}`,
          // Keys never enter the container: only where the model gateway is and a placeholder key.
          ...(modelGateway ? [`TARMAC_MODEL_PORT=${modelPort}`, ...(adapter.modelEnv?.(`http://127.0.0.1:${modelPort}`) ?? [])] : []),
        ],
        binds: [
          // Reviewers read; everyone else writes their own copy.
          `${workspace.copy}:${containerPaths.workspace}:${role === 'reviewer' ? 'ro' : 'rw'}`,
          `${join(dir, 'task.json')}:${containerPaths.task}:ro`,
          `${join(dir, 'prompt.md')}:${containerPaths.prompt}:ro`,
          `${outDir}:${containerPaths.out}:rw`,
          `${gateway.socketDir}:/tarmac/gateway:rw`,
          `${conversation}:${containerPaths.conversation}:rw`,
          ...objectDirs.map((objects) => `${objects}:${objects}:ro`),
        ],
        workingDir: containerPaths.workspace,
        timeoutMs: parseDuration(limits.timeout) ?? 30 * 60_000,
        logFile: join(paths.logs, `${step}.log`),
        memoryBytes,
        nanoCpus,
        pidsLimit: limits.pids,
        networkMode: limits.network,
      }).finally(() => Promise.all([gateway.close(), modelGateway?.close()]));
      // The agent has ended: its command container goes. (A worker that stopped mid-session leaves it for the retry.)
      await commands?.remove();
      const tools = gateway.state();
      const modelUsage = modelGateway?.usage();

      const stdout = await containerStdout(docker, result.containerId);
      // A CLI had its first turn when it asked its model gateway anything (CLIs print before they ask:
      // Codex's thread.started, warnings), so output alone is not a turn.
      const sawFirstTurn = harness.adapter === 'script' ? stdout.includes(firstTurnMarker) : (modelUsage?.requests ?? 0) > 0;
      let delivered: SessionResult | undefined;
      let resultProblem: string | undefined;
      if (adapter.output === 'result-file') {
        // out/ is the agent's: the result is read as a regular file, never through a link.
        let text: string | undefined;
        try {
          text = (await readFileNoFollow(outDir, 'result.json', maxResultBytes)).toString('utf8');
        } catch (error) {
          resultProblem = error instanceof ConfinedPathError && error.code === 'missing' ? 'result.json is missing' : `result.json is refused: ${(error as Error).message}`;
        }
        if (text !== undefined) {
          try {
            const check = checkSessionResult(JSON.parse(text));
            if (check.ok) delivered = check.result;
            else resultProblem = check.problem;
          } catch (error) {
            resultProblem = `result.json is not valid JSON: ${(error as Error).message}`;
          }
        }
      } else {
        const parsed = adapter.parse(stdout);
        const block = parsed.ok ? readResultBlock(parsed.result.summary) : undefined;
        if (!parsed.ok) resultProblem = parsed.problem;
        else if (!block!.ok) resultProblem = block!.problem;
        else if (role === 'reviewer' && !block!.found && parsed.result.status === 'ok') resultProblem = `the reviewer's last message has no ${resultFence} block: its findings cannot be read`;
        else {
          delivered = { ...parsed.result, summary: block!.summary, ...block!.fields };
          await writeFileAtomic(join(dir, 'result.json'), `${JSON.stringify(delivered, null, 2)}\n`);
        }
      }
      // The agent's commits cross the boundary as a bundle (reviewers commit nothing).
      const crossed = role === 'reviewer' ? undefined : await collectCommits({ runId, step, image: harness.image, user: `${user.uid}:${user.gid}`, workspace, baseSha, objectDirs, attempt, sessionId, logFile: join(paths.logs, `${step}-export.log`) });
      const headSha = crossed?.headSha ?? baseSha;
      const commitsAdded = crossed?.headSha ? await commitsOver(paths.worktree, baseSha, crossed.headSha) : 0;
      return {
        attempt,
        harnessModel,
        containerId: result.containerId,
        exitCode: result.exitCode,
        oomKilled: result.oomKilled,
        timedOut: result.timedOut,
        reattached: result.reattached,
        foundFinished: result.foundFinished,
        durationMs: result.durationMs,
        sawFirstTurn,
        ...(delivered ? { result: delivered } : {}),
        ...(resultProblem ? { resultProblem } : {}),
        commitsAdded,
        ...(crossed?.state === 'rebasing' ? { workspaceState: 'rebasing' as const } : {}),
        ...(crossed?.problem ? { exportProblem: crossed.problem } : {}),
        headSha,
        logRef: dataRef(dataDir, join(paths.logs, `${step}.log`)),
        hostId,
        ...(resumes ? { continued: resumes } : {}),
        ...(modelUsage
          ? {
              modelUsage: {
                inputTokens: modelUsage.inputTokens,
                outputTokens: modelUsage.outputTokens,
                costUsd: modelUsage.costUsd,
                requests: modelUsage.requests,
                budgetRefusals: modelUsage.budgetRefusals,
                ...(modelUsage.lastBudgetRefusal ? { lastBudgetRefusal: modelUsage.lastBudgetRefusal.reason } : {}),
              },
            }
          : {}),
        gateway: {
          toolCalls: tools.toolCalls,
          commandFailures: Object.entries(tools.totalFailures).map(([command, count]) => ({ command, count })),
          circuitBreakerTriggered: tools.triggered,
          refusals: tools.refusals,
        },
      };
    },
  };
}

export type SessionActivities = ReturnType<typeof createSessionActivities>;
