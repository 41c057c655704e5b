import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import type Docker from 'dockerode';
import type { ReportedRunEvent, SessionEventType } from '../../core/events';
import { parseDuration } from '../../core/duration';
import { splitHarnessModel } from '../../core/harness-models';
import { adapters, modelProviderOf } from '../../core/harnesses';
import { containerPaths, type HarnessAdapter } from '../../core/harnesses/types';
import { runRecipes } from '../../core/node/recipes';
import { resultContract } from '../../core/harnesses/result-contract';
import type { Harness, RecipeSnapshot, Recipes, SessionLimits } from '../../core/recipe-schemas';
import type { ConversationRef, SessionAttemptReport, SessionRole, SessionTask } from '../../core/session-types';
import type { EnvironmentRef } from '../../core/environment-types';
import type { ModelBudgetLeft } from '../../policies/model-budget';
import { runEventSignal } from '../../core/messages';
import { agentAvailability, providerKeys } from '../../core/agent-availability';
import { containerStdout, labelKeys, runStepContainer, type ContainerResult } from '../containers/containers';
import { commandContainer, type CommandContainer } from '../containers/command-container';
import { startGateway, type GatewayHandle } from '../gateways/tool-gateway';
import { startModelGateway, type ModelGatewayHandle } from '../gateways/model-gateway';
import { containerUser, handToContainerUser } from '../git/git';
import { dataRef, mirrorPath, recordInManifest, runPaths, type RunPaths } from '../stores/run-store';
import { availabilityFacts } from './agent-availability';
import { readDeliveredResult } from './attempt-result';
import { recordDiffTelemetry } from './diff-telemetry';
import { loadScriptScenario } from './script-scenarios';
import {
  advanceWorkspace,
  attemptWorkspace,
  commitsOver,
  importExport,
  prepareAttemptCopy,
  prepareConversation,
  rebaseStopped,
  runExport,
  type AttemptExport,
  type AttemptWorkspace,
} from './session-workspace';

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

/** The session activities' dependencies with their defaults taken. */
type AttemptDeps = Required<Pick<SessionActivityDeps, 'dataDir' | 'hostId' | 'docker' | 'secrets' | 'modelUpstreams'>> &
  Pick<SessionActivityDeps, 'recipesDir' | 'scriptScenariosDir'>;

/** The container's loopback port of the model forwarder (images/shared/tarmac-forward). */
const modelPort = 8417;

/** The marker script agents print when they reach their first turn. */
const firstTurnMarker = '[tarmac] first-turn';

/** A conversation's UUID, the same on every retry of the attempt (Claude Code's --session-id). */
export function conversationUuid(runId: string, sessionId: string, attempt: number): string {
  const hex = createHash('sha256').update(`${runId}/${sessionId}/a${attempt}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** What every stage of one attempt reads: the input, the recipes and the attempt's places. */
interface Attempt {
  deps: AttemptDeps;
  input: RunSessionInput;
  recipes: Recipes;
  model: string;
  harnessName: string;
  adapter: HarnessAdapter;
  paths: RunPaths;
  step: string;
  /** The attempt's directory: task, prompt, out/, the copy and the CLI's conversation. */
  dir: string;
  outDir: string;
  /** `uid:gid` the agent runs as. */
  user: string;
  /** The copy reads the mirror's objects through alternates; agents can read them, not write them. */
  objectDirs: string[];
  sessionEnv: string[];
  memoryBytes: number;
  nanoCpus: number;
}

/** The session's gateways, up before its container: the tool gateway, the model gateway and a command container. */
interface Gateways {
  gateway: GatewayHandle;
  modelGateway?: ModelGatewayHandle;
  commands?: CommandContainer;
  /** The agent's container, once it is known (the tool gateway's `run_command` runs beside it). */
  container: { id?: string };
}

/**
 * Runs one attempt of an agent session in its container, or reattaches to it, and reports
 * everything observable: exit, OOM, timeout, first turn, result validity, commits added. It
 * judges nothing; the workflow classifies. The pipeline: find or reattach → prepare the copy →
 * gateways → run → collect.
 */
export async function runAttempt(deps: AttemptDeps, input: RunSessionInput): Promise<SessionAttemptReport> {
  const attempt = describeAttempt(deps, input);
  const found = await findOrReattach(attempt);
  if (found.unavailable) return unavailableReport(input, deps.hostId, found.unavailable);
  if (!found.reattaches) await writeAttemptFiles(attempt, found.scenario);
  // The agent works in a copy of the run workspace of its own; the workspace stays the worker's.
  const workspace = await prepareAttemptCopy(attempt.paths.worktree, attempt.dir, input.environment?.products);
  const { conversation, resumes, conversationRef } = await prepareAttemptConversation(attempt);
  const gateways = await startGateways(attempt, workspace.copy);
  const result = await runAgent(attempt, gateways, { workspace: workspace.copy, conversation, conversationRef });
  // The agent has ended: its command container goes. (A worker that stopped mid-session leaves it for the retry.)
  await gateways.commands?.remove();
  return await collectAttempt(attempt, gateways, result, workspace, resumes);
}

function describeAttempt(deps: AttemptDeps, input: RunSessionInput): Attempt {
  const { model, harness: harnessName } = splitHarnessModel(input.harnessModel)!;
  const paths = runPaths(deps.dataDir, input.runId);
  const step = `session-${input.sessionId}-a${input.attempt}`;
  const dir = join(paths.runDir, 'sessions', input.sessionId, `a${input.attempt}`);
  const user = containerUser();
  return {
    deps,
    input,
    recipes: runRecipes(input.recipes, deps.recipesDir),
    model,
    harnessName,
    adapter: adapters[input.harness.adapter],
    paths,
    step,
    dir,
    outDir: join(dir, 'out'),
    user: `${user.uid}:${user.gid}`,
    objectDirs: [join(mirrorPath(deps.dataDir, input.repo), 'objects')],
    sessionEnv: [
      'HOME=/tmp',
      'GIT_AUTHOR_NAME=tarmac-agent',
      'GIT_AUTHOR_EMAIL=agent@tarmac.invalid',
      'GIT_COMMITTER_NAME=tarmac-agent',
      'GIT_COMMITTER_EMAIL=agent@tarmac.invalid',
    ],
    memoryBytes: input.limits.memoryMb * 1024 * 1024,
    nanoCpus: Math.round(input.limits.cpus * 1e9),
  };
}

/**
 * Finds the attempt's container (a retry reattaches to it). A new attempt is first checked: an
 * agent this worker cannot run is said so at once, with what is missing, and nothing is started;
 * a script model's scenario is this worker's data (never the request's), read here.
 */
async function findOrReattach(attempt: Attempt): Promise<{ reattaches: boolean; scenario: object; unavailable?: string }> {
  const { deps, input, harnessName, model } = attempt;
  const found = await deps.docker.listContainers({
    all: true,
    filters: JSON.stringify({ label: [`${labelKeys.run}=${input.runId}`, `${labelKeys.step}=${attempt.step}`] }),
  });
  if (found.length > 0) return { reattaches: true, scenario: {} };
  const facts = await availabilityFacts({ docker: deps.docker, secrets: deps.secrets, modelUpstreams: deps.modelUpstreams }, { [harnessName]: input.harness });
  const availability = agentAvailability(input.harnessModel, { [harnessName]: input.harness }, facts);
  if (!availability.ok) return { reattaches: false, scenario: {}, unavailable: availability.reason };
  const scenario = input.harness.adapter === 'script' ? await loadScriptScenario(deps.scriptScenariosDir, model) : { ok: true as const, scenario: {} };
  if (!scenario.ok) return { reattaches: false, scenario: {}, unavailable: `${input.harnessModel} cannot run: ${scenario.reason}` };
  return { reattaches: false, scenario: scenario.scenario };
}

/** A new attempt's files: the manifest entry, the task (with the scenario merged in) and the prompt. */
async function writeAttemptFiles(attempt: Attempt, scenario: object): Promise<void> {
  const { deps, input, paths, dir, outDir, model, harnessName, adapter } = attempt;
  const { runId, repo, role, task } = input;
  const mirror = mirrorPath(deps.dataDir, repo);
  await recordInManifest(
    paths.manifest,
    { runId, repo, mirror, hostId: deps.hostId, createdAt: new Date().toISOString(), containerRunLabel: runId },
    { dirs: [attemptWorkspace(dir).copy, attemptWorkspace(dir).exportDir] },
  );
  await mkdir(outDir, { recursive: true });
  await writeFile(join(dir, 'task.json'), `${JSON.stringify({ role, model, harness: harnessName, attempt: input.attempt, ...scenario, ...task }, null, 2)}\n`);
  // CLI agents hand back findings, questions and drops in a fenced block of their last message.
  await writeFile(join(dir, 'prompt.md'), `${task.prompt}\n${adapter.output === 'stdout' ? `${resultContract(role)}\n` : ''}`);
  await handToContainerUser(outDir);
}

/**
 * The CLI's own state, per attempt; a follow-up on the same harness starts from a copy of the
 * conversation it continues (the earlier one stays as it was), and resumes it.
 */
async function prepareAttemptConversation(
  attempt: Attempt,
): Promise<{ conversation: string; resumes?: ConversationRef; conversationRef: { id: string; resume: boolean } }> {
  const { input, adapter, harnessName, paths, dir } = attempt;
  const { runId, sessionId } = input;
  const resumes =
    input.continues && adapter.resumable && splitHarnessModel(input.continues.harnessModel)?.harness === harnessName ? input.continues : undefined;
  const conversation = await prepareConversation(dir, resumes ? join(paths.runDir, 'sessions', resumes.sessionId, `a${resumes.attempt}`) : undefined);
  const conversationRef = resumes
    ? { id: conversationUuid(runId, resumes.sessionId, resumes.attempt), resume: true }
    : { id: conversationUuid(runId, sessionId, input.attempt), resume: false };
  return { conversation, ...(resumes ? { resumes } : {}), conversationRef };
}

/**
 * The session's gateways, started before its container so their sockets are there when the agent
 * starts: in a repository environment a command container `run_command` runs in (running before
 * the agent starts: its first command does not wait for it, and an environment that cannot run
 * fails the attempt now); the tool gateway; and for a CLI agent its only way to a model, the model
 * gateway, whose socket sits next to the tool gateway's in the one mounted directory. The key stays
 * here; the container gets a placeholder.
 */
async function startGateways(attempt: Attempt, copy: string): Promise<Gateways> {
  const { deps, input, recipes, paths, step, dir, user } = attempt;
  const { docker, dataDir } = deps;
  const { runId, sessionId, role, limits } = input;
  const commands: CommandContainer | undefined = input.environment
    ? commandContainer({
        docker,
        dataDir,
        runId,
        sessionStep: step,
        labels: { 'tarmac.session': sessionId, 'tarmac.attempt': String(input.attempt) },
        environment: input.environment,
        workspace: copy,
        readOnly: role === 'reviewer',
        objectDirs: attempt.objectDirs,
        user,
        env: attempt.sessionEnv,
        memoryBytes: attempt.memoryBytes,
        nanoCpus: attempt.nanoCpus,
        pidsLimit: limits.pids,
        logFile: join(paths.logs, `${step}-command.log`),
      })
    : undefined;
  await commands?.ensure();
  const container: Gateways['container'] = {};
  const gatewayDir = join(paths.runDir, 'sessions', sessionId, 'gateway');
  const gateway = await startGateway({
    dir: gatewayDir,
    workspace: copy,
    docker,
    containerId: () => container.id,
    ...(commands ? { commandContainer: commands.ensure } : {}),
    user,
    rules: recipes.playbooks.grounding,
    maxToolCalls: recipes.playbooks.limits.maxToolIterations,
    readOnly: role === 'reviewer',
  });
  const provider = modelProviderOf(input.harness.adapter, attempt.model);
  if (!provider) return { gateway, ...(commands ? { commands } : {}), container };
  try {
    const modelGateway = await startModelGateway({
      dir: join(dir, 'model-gateway'),
      socketKey: gatewayDir,
      provider,
      upstream: deps.modelUpstreams[provider],
      apiKey: deps.secrets[providerKeys[provider]] || undefined,
      budget: { left: input.modelBudget ?? { tokens: Number.MAX_SAFE_INTEGER, costUsd: Number.MAX_SAFE_INTEGER } },
      pricing: recipes.pricing,
    });
    return { gateway, modelGateway, ...(commands ? { commands } : {}), container };
  } catch (error) {
    await gateway.close();
    throw error;
  }
}

/** Runs (or reattaches to) the agent's container; the gateways close when it ends. */
async function runAgent(
  attempt: Attempt,
  gateways: Gateways,
  files: { workspace: string; conversation: string; conversationRef: { id: string; resume: boolean } },
): Promise<ContainerResult> {
  const { deps, input, model, harnessName, adapter, paths, step, dir, outDir, user } = attempt;
  const { runId, sessionId, role, limits } = input;
  const { gateway, modelGateway, container } = gateways;
  const report = eventReporter(input.reportTo, { sessionId, role, attempt: input.attempt, harnessModel: input.harnessModel });
  return await runStepContainer(deps.docker, {
    onContainer: (id) => {
      container.id = id;
    },
    onRunning: ({ containerId: id, reattached }) => report(reattached ? 'reattached' : 'spawned', id),
    onFirstOutput: () => report('first-turn', container.id ?? ''),
    labels: {
      [labelKeys.run]: runId,
      [labelKeys.step]: step,
      [labelKeys.role]: role,
      'tarmac.session': sessionId,
      'tarmac.harness': harnessName,
      'tarmac.model': model,
      'tarmac.attempt': String(input.attempt),
    },
    image: input.harness.image,
    cmd: adapter.command(model, files.conversationRef),
    user,
    env: [
      ...attempt.sessionEnv,
      `TARMAC_ATTEMPT=${input.attempt}`,
      `TARMAC_MODEL=${model}`,
      `TARMAC_ROLE=${role}`,
      `TARMAC_SESSION=${sessionId}`,
      // Keys never enter the container: only where the model gateway is and a placeholder key.
      ...(modelGateway ? [`TARMAC_MODEL_PORT=${modelPort}`, ...(adapter.modelEnv?.(`http://127.0.0.1:${modelPort}`) ?? [])] : []),
    ],
    binds: [
      // Reviewers read; everyone else writes their own copy.
      `${files.workspace}:${containerPaths.workspace}:${role === 'reviewer' ? 'ro' : 'rw'}`,
      `${join(dir, 'task.json')}:${containerPaths.task}:ro`,
      `${join(dir, 'prompt.md')}:${containerPaths.prompt}:ro`,
      `${outDir}:${containerPaths.out}:rw`,
      `${gateway.socketDir}:/tarmac/gateway:rw`,
      `${files.conversation}:${containerPaths.conversation}:rw`,
      ...attempt.objectDirs.map((objects) => `${objects}:${objects}:ro`),
    ],
    workingDir: containerPaths.workspace,
    timeoutMs: parseDuration(limits.timeout) ?? 30 * 60_000,
    logFile: join(paths.logs, `${step}.log`),
    memoryBytes: attempt.memoryBytes,
    nanoCpus: attempt.nanoCpus,
    pidsLimit: limits.pids,
    networkMode: limits.network,
  }).finally(() => Promise.all([gateway.close(), modelGateway?.close()]));
}

/** Collects what the attempt left: its first turn, its result, its commits, the gateways' meters. */
async function collectAttempt(
  attempt: Attempt,
  gateways: Gateways,
  result: ContainerResult,
  workspace: AttemptWorkspace,
  resumes: ConversationRef | undefined,
): Promise<SessionAttemptReport> {
  const { deps, input, adapter, paths, step, dir, outDir } = attempt;
  const { role, baseSha } = input;
  const tools = gateways.gateway.state();
  const modelUsage = gateways.modelGateway?.usage();
  const stdout = await containerStdout(deps.docker, result.containerId);
  // A CLI had its first turn when it asked its model gateway anything (CLIs print before they ask:
  // Codex's thread.started, warnings), so output alone is not a turn.
  const sawFirstTurn = input.harness.adapter === 'script' ? stdout.includes(firstTurnMarker) : (modelUsage?.requests ?? 0) > 0;
  const { delivered, resultProblem } = await readDeliveredResult({ adapter, role, dir, outDir, stdout });
  // The agent's commits cross the boundary as a bundle (reviewers commit nothing).
  const crossed = role === 'reviewer' ? undefined : await collectCommits(attempt, workspace);
  const headSha = crossed?.headSha ?? baseSha;
  const commitsAdded = crossed?.headSha ? await commitsOver(paths.worktree, baseSha, crossed.headSha) : 0;
  // A CLI with tools of its own left no trace in the tool gateway: its telemetry is its diff.
  if (adapter.ownTools && commitsAdded > 0)
    await recordDiffTelemetry({
      telemetryPath: join(paths.runDir, 'sessions', input.sessionId, 'gateway', 'telemetry.jsonl'),
      repo: paths.worktree,
      baseSha,
      headSha,
      attempt: input.attempt,
      harness: attempt.harnessName,
    });
  return {
    attempt: input.attempt,
    harnessModel: input.harnessModel,
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
    logRef: dataRef(deps.dataDir, join(paths.logs, `${step}.log`)),
    hostId: deps.hostId,
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
            ...(modelUsage.lastModelRefusal ? { refusedModel: modelUsage.lastModelRefusal.reason } : {}),
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
}

/**
 * Brings an attempt's commits into the worker-owned run workspace: the export container bundles
 * them, the worker fetches the bundle, and a head that builds on the workspace's head advances it
 * (a resolver's head waits for the rebase capsule).
 */
async function collectCommits(attempt: Attempt, workspace: AttemptWorkspace): Promise<AttemptExport> {
  const { deps, input, paths, step } = attempt;
  const { baseSha, sessionId } = input;
  const worktree = paths.worktree;
  const exported = await runExport({
    docker: deps.docker,
    runId: input.runId,
    step,
    image: input.harness.image,
    user: attempt.user,
    paths: workspace,
    baseSha,
    objectDirs: attempt.objectDirs,
    logFile: join(paths.logs, `${step}-export.log`),
  });
  if (exported.exitCode !== 0)
    return { headSha: null, state: 'clean', problem: `the export of the agent's commits exited ${exported.exitCode ?? '(timeout)'}` };
  const imported = await importExport(worktree, workspace, baseSha, `refs/tarmac/sessions/${sessionId}/a${input.attempt}`);
  if (imported.headSha && imported.state === 'clean' && (await commitsOver(worktree, baseSha, imported.headSha)) > 0 && !(await rebaseStopped(worktree))) {
    await advanceWorkspace(worktree, imported.headSha);
  }
  return imported;
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
