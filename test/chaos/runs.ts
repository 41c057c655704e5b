/**
 * The chaos suite's runs: landings of every flow (clean, two on one target, a conflict for the
 * scripted resolver, a red gate for the scripted fixer, a review panel), a standalone review panel,
 * a fix loop with an agent and a nightly, each on fixture repositories of its own. A pass makes a
 * fresh set (every base carries a file naming the pass and the run, so no tree of one pass is a tree
 * of another and the findings cache of the first pass never answers the second), starts it through
 * the HTTP API and awaits every run through Temporal. What a run ended with is reduced to its
 * `shape`: what must be equal with and without faults (no SHA, time or id).
 */
import { execFileSync } from 'node:child_process';
import { WorkflowFailedError } from '@temporalio/client';
import type { FixOutcome } from '../../core/fix-types';
import type { NightlyOutcome } from '../../core/nightly-types';
import type { PanelVerdict } from '../../core/review-types';
import type { LandingOutcome } from '../../core/types';
import { createFixtureRepo, gateFile, type FixtureRepo } from '../../infra/fixture-repo';
import type { Stack } from '../helpers/stack';

export type RunKind = 'landing' | 'review' | 'fix-loop' | 'nightly';

/** The flow a run exercises (its key names it): what the suite has of each at scale 1. */
export const flows = {
  clean: 2,
  queue: 1,
  conflict: 2,
  fixup: 2,
  review: 1,
  panel: 1,
  fix: 1,
  nightly: 1,
} as const;
export type Flow = keyof typeof flows;

/**
 * Scenarios of the scripted agents the runs name (written once per stack). Like the gates (`sleep`),
 * the agents take a few seconds, as real steps take minutes: a run is mostly containers at work,
 * which go on while the worker is down.
 */
export function writeScenarios(stack: Stack): void {
  stack.scriptScenario('chaos-write-fixed', { slowMs: 8_000, edits: [{ file: 'FIXED', replace: 'yes\n' }] });
  stack.scriptScenario('chaos-fix-max', { slowMs: 8_000, edits: [{ file: 'src/max.js', find: 'a < b', replace: 'a > b' }] });
}

export interface ChaosRun {
  /** Stable across passes: `<flow>-<n>` (a queue pair: `queue-<n>-x` and `-y`). */
  key: string;
  flow: Flow;
  kind: RunKind;
  repo: FixtureRepo;
  /** The branch of `repo` the run may move (landings, nightlies): its reflog is checked. */
  target?: string;
  /** The target's head before the pass. */
  targetBefore?: string;
  /** Starts the run through the API; returns its workflow id. */
  start(stack: Stack): Promise<string>;
  /** Started this long after the pass began (both passes alike), not at once. */
  startAfterMs?: number;
  id?: string;
  result?: unknown;
  finishedAtMs?: number;
}

const git = (dir: string, ...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();

/** Records every update of the origin's refs (bare repositories keep no reflog by default). */
function logRefUpdates(repo: FixtureRepo): FixtureRepo {
  git(repo.path, 'config', 'core.logAllRefUpdates', 'always');
  return repo;
}

async function post(stack: Stack, path: string, body: unknown): Promise<string> {
  const created = await stack.api('POST', path, body);
  if (created.status !== 201) throw new Error(`POST ${path} answered ${created.status}: ${JSON.stringify(created.body)}`);
  return created.body.id as string;
}

const checkGate = (extra: Record<string, unknown> = {}) => gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], extra);

/** One pass's runs at `scale` (each flow's count times scale). */
export function makeRuns(pass: string, scale: number): ChaosRun[] {
  const runs: ChaosRun[] = [];
  for (const [flow, count] of Object.entries(flows) as [Flow, number][]) {
    for (let n = 1; n <= count * scale; n += 1) runs.push(...makeFlow(flow, `${flow}-${n}`, pass));
  }
  return runs;
}

function landing(key: string, flow: Flow, repo: FixtureRepo, branches: string[], extra: Record<string, unknown> = {}): ChaosRun {
  return {
    key,
    flow,
    kind: 'landing',
    repo,
    target: 'main',
    start: (stack) => post(stack, '/v1/landings', { repo: repo.url, branches, target: 'main', ...extra }),
  };
}

function makeFlow(flow: Flow, key: string, pass: string): ChaosRun[] {
  // Unique trees per pass and run: the findings cache keys by tree.
  const salt = { 'chaos-run.txt': `${pass} ${key}\n` };
  switch (flow) {
    case 'clean': {
      const repo = logRefUpdates(
        createFixtureRepo({
          base: {
            ...salt,
            'a.txt': 'a\n',
            'b.txt': 'b\n',
            'check.sh': 'sleep 8; grep -q A a.txt && grep -q B b.txt\n',
            '.config/tarmac/land-gate.json': checkGate({ fixup: { maxRounds: 0 } }),
          },
          branches: [
            { name: 'feature/a', commits: [{ message: 'a: upper', files: { 'a.txt': 'A\n' } }] },
            { name: 'feature/b', commits: [{ message: 'b: upper', files: { 'b.txt': 'B\n' } }] },
          ],
        }),
      );
      return [landing(key, flow, repo, ['feature/a', 'feature/b'])];
    }
    case 'queue': {
      // Two landings on one target at once: the target queue admits one, the other is rebased onto it and re-gated.
      const repo = logRefUpdates(
        createFixtureRepo({
          base: { ...salt, 'check.sh': 'sleep 8\n', '.config/tarmac/land-gate.json': checkGate() },
          branches: [
            { name: 'feature/x', commits: [{ message: 'x', files: { 'x.txt': 'x\n' } }] },
            { name: 'feature/y', commits: [{ message: 'y', files: { 'y.txt': 'y\n' } }] },
          ],
        }),
      );
      return [landing(`${key}-x`, flow, repo, ['feature/x']), landing(`${key}-y`, flow, repo, ['feature/y'])];
    }
    case 'conflict': {
      const repo = createFixtureRepo({
        base: { ...salt, 'shared.txt': 'base\n', 'check.sh': 'sleep 8; test -f shared.txt\n', '.config/tarmac/land-gate.json': checkGate() },
        branches: [
          {
            name: 'feature/one',
            commits: [
              { message: 'one: change shared', files: { 'shared.txt': 'one\n' } },
              { message: 'one: add notes', files: { 'notes.txt': 'notes\n' } },
            ],
          },
        ],
      });
      // The target moves on the same line after the branch was cut: the rebase conflicts.
      repo.advanceTarget('target changes shared', { 'shared.txt': 'target\n' });
      return [landing(key, flow, logRefUpdates(repo), ['feature/one'], { agents: { resolver: 'script#resolver', ladder: ['script#resolver'] } })];
    }
    case 'fixup': {
      const repo = logRefUpdates(
        createFixtureRepo({
          base: { ...salt, 'check.sh': 'sleep 8; test -f FIXED || { echo "FIXED is missing"; exit 4; }\n', '.config/tarmac/land-gate.json': checkGate() },
          branches: [{ name: 'feature/f', commits: [{ message: 'feature without the fix', files: { 'feature.txt': 'f\n' } }] }],
        }),
      );
      const fixer = 'script#slow-fixer:chaos-write-fixed';
      return [landing(key, flow, repo, ['feature/f'], { agents: { fixer, ladder: [fixer] } })];
    }
    case 'review': {
      const repo = logRefUpdates(
        createFixtureRepo({
          base: { ...salt, 'check.sh': 'sleep 8\n', '.config/tarmac/land-gate.json': checkGate({ review: { panel: 'script-slow-third', quorum: 3 } }) },
          branches: [{ name: 'feature/r', commits: [{ message: 'feature', files: { 'src/feature.js': 'module.exports = 1; // TODO: name it\n' } }] }],
        }),
      );
      return [landing(key, flow, repo, ['feature/r'])];
    }
    case 'panel': {
      const repo = createFixtureRepo({
        base: { ...salt, 'README.md': '# r\n' },
        branches: [{ name: 'feature/p', commits: [{ message: 'feature', files: { 'src/p.js': 'module.exports = 2; // TODO: name it\n' } }] }],
      });
      return [
        {
          key,
          flow,
          kind: 'review',
          repo,
          start: (stack) => post(stack, '/v1/reviews', { repo: repo.url, base: 'main', head: 'feature/p', panel: 'script-slow-third' }),
        },
      ];
    }
    case 'fix': {
      const repo = createFixtureRepo({
        base: {
          ...salt,
          Makefile: 'test:\n\tsleep 6\n\tnode test.js\n',
          'src/max.js': 'module.exports = (a, b) => (a < b ? a : b);\n',
          'test.js': "const max = require('./src/max.js');\nif (max(2, 5) !== 5) { console.error('max(2, 5) should be 5'); process.exit(1); }\n",
        },
      });
      const implementer = 'script#slow-fixer:chaos-fix-max';
      return [
        {
          key,
          flow,
          kind: 'fix-loop',
          repo,
          start: (stack) =>
            post(stack, '/v1/fix-loops', {
              repo: repo.url,
              branch: 'main',
              request: 'the unit test for max fails',
              agents: { implementer, ladder: [implementer] },
            }),
        },
      ];
    }
    case 'nightly': {
      // `make smoke` has no rule but scripts/smoke.sh exists: the playbook repairs it, and the repair lands.
      // The suite waits a little first, so its red gate takes as long as a real one.
      const repo = logRefUpdates(
        createFixtureRepo({
          base: {
            ...salt,
            '.config/tarmac/land-gate.json': gateFile([{ id: 'smoke', run: ['sh', '-c', 'sleep 4; make smoke'] }]),
            Makefile: 'test:\n\ttrue\n',
            'scripts/smoke.sh': 'sleep 8; echo smoke ok\n',
          },
        }),
      );
      return [
        {
          key,
          flow,
          kind: 'nightly',
          repo,
          target: 'main',
          // After the landings' placements: its first phases (inspect, prepare, gate) come a second
          // apart, and each gets a kill of its own only while kills are not coming for the landings.
          startAfterMs: 8_000,
          async start(stack) {
            // Paused: only the trigger runs it.
            const schedule = await post(stack, '/v1/schedules', { repo: repo.url, target: 'main', paused: true });
            const triggered = await stack.api('POST', `/v1/schedules/${schedule}/trigger`);
            if (triggered.status !== 202) throw new Error(`trigger answered ${triggered.status}: ${JSON.stringify(triggered.body)}`);
            return await nightlyRunId(stack, schedule);
          },
        },
      ];
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The workflow id of the run a schedule's trigger started (the schedule lists it once taken). */
async function nightlyRunId(stack: Stack, schedule: string): Promise<string> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const description = await stack.client.schedule
      .getHandle(schedule)
      .describe()
      .catch(() => undefined);
    const action = description?.info.recentActions.at(-1) ?? description?.info.runningActions[0];
    const workflowId = action ? ('action' in action ? action.action.workflow.workflowId : action.workflow.workflowId) : undefined;
    if (workflowId) return workflowId;
    await sleep(200);
  }
  throw new Error(`schedule ${schedule} started no run within 60 s`);
}

/**
 * Waits for a run's result through Temporal, riding out a server that is down or restarting
 * (the long poll fails, and is asked again); a run that failed is an error.
 */
export async function awaitResult(stack: Stack, id: string, timeoutMs: number): Promise<unknown> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      return await stack.client.workflow.getHandle(id).result();
    } catch (error) {
      if (error instanceof WorkflowFailedError) throw new Error(`run ${id} failed: ${error.cause?.message ?? error.message}`);
      last = error;
      await sleep(500);
    }
  }
  throw new Error(`run ${id} did not finish within ${timeoutMs} ms (last error: ${String(last)})`);
}

/** What the run changed on its target, as path → content (the salt file left out). */
function changedFiles(repoPath: string, from: string | undefined, to: string | undefined): Record<string, string> {
  if (!from || !to) return {};
  const files: Record<string, string> = {};
  for (const line of git(repoPath, 'diff', '--name-status', '--no-renames', from, to).split('\n').filter(Boolean)) {
    const [status, path] = line.split('\t') as [string, string];
    files[path] = status === 'D' ? '(deleted)' : git(repoPath, 'show', `${to}:${path}`);
  }
  return files;
}

/** The parts of a run's result that do not depend on timing: equal with and without faults. */
export function shape(run: ChaosRun): unknown {
  switch (run.kind) {
    case 'landing': {
      const outcome = run.result as LandingOutcome;
      // Two landings on one target: which one merges first is a race, so only the last gate round counts there.
      const lastRound = Math.max(0, ...outcome.gates.map((gate) => gate.round ?? 1));
      const gates =
        run.flow === 'queue'
          ? outcome.gates.filter((gate) => (gate.round ?? 1) === lastRound).map((gate) => `${gate.suiteId}:${gate.status}`)
          : outcome.gates.map((gate) => `${gate.round}:${gate.suiteId}:${gate.status}`);
      return {
        status: outcome.status,
        endedInPhase: outcome.endedInPhase,
        failure: outcome.failure?.type,
        gates,
        provenance: (outcome.provenance ?? []).map((entry) => `${entry.branch}:${entry.subject}:${entry.how}`),
        sessions: (outcome.sessions ?? []).map((session) => `${session.sessionId}:${session.role}:${session.status}:${session.attempts}`),
        fixLoops: (outcome.fixLoops ?? []).map((loop) => `${loop.outcome}:${loop.playbookUsed}:${loop.filesChanged.join(',')}`),
        reviews: (outcome.reviews ?? []).map((review) => ({
          status: review.status,
          cache: review.cache,
          sessionsStarted: review.sessionsStarted,
          reviewers: review.reviewers.map((reviewer) => `${reviewer.harnessModel}:${reviewer.source}:${reviewer.status}:${reviewer.attempts}`),
          blocking: review.blocking.length,
        })),
        changed: changedFiles(run.repo.path, outcome.targetSha, outcome.mergedSha),
      };
    }
    case 'review': {
      const verdict = run.result as PanelVerdict;
      return {
        status: verdict.status,
        cache: verdict.cache,
        sessionsStarted: verdict.sessionsStarted,
        reviewers: verdict.reviewers.map((reviewer) => `${reviewer.harnessModel}:${reviewer.source}:${reviewer.status}:${reviewer.attempts}`),
        findings: verdict.findings.map((finding) => `${finding.file}:${finding.line ?? ''}:${finding.severity}`).sort(),
      };
    }
    case 'fix-loop': {
      const outcome = run.result as FixOutcome;
      return {
        outcome: outcome.outcome,
        reproCommand: outcome.reproCommand,
        reproExitCode: outcome.reproExitCode,
        playbookUsed: outcome.playbookUsed,
        filesChanged: outcome.filesChanged,
        repairAttempts: outcome.repairAttempts,
        sessions: outcome.sessions.map((session) => `${session.sessionId}:${session.status}:${session.attempts ?? ''}`),
        fixed: outcome.fixBranch ? changedFiles(run.repo.path, 'main', outcome.fixBranch) : {},
      };
    }
    case 'nightly': {
      const outcome = run.result as NightlyOutcome;
      return {
        status: outcome.status,
        failingSuites: outcome.failingSuites,
        gates: outcome.gates.map((gate) => `${gate.suiteId}:${gate.status}`),
        fixLoop: outcome.fixLoop ? `${outcome.fixLoop.outcome}:${outcome.fixLoop.playbookUsed}:${outcome.fixLoop.filesChanged.join(',')}` : null,
        landing: outcome.landing?.status ?? null,
        changed: changedFiles(run.repo.path, outcome.targetSha, outcome.landing?.mergedSha),
      };
    }
  }
}
