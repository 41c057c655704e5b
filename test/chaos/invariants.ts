/**
 * The chaos suite's invariants, read from the outside: the bare origins (their reflogs), the Docker
 * engine (containers created and left, by label) and the worker's data dir (run manifests). Each
 * check returns the problems it found, as sentences naming the run; none is the pass.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import type { NightlyOutcome } from '../../core/nightly-types';
import type { LandingOutcome } from '../../core/types';
import type { Stack } from '../helpers/stack';
import { awaitResult, type ChaosRun } from './runs';

const git = (dir: string, ...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();
const isAncestor = (dir: string, ancestor: string, descendant: string) => {
  try {
    execFileSync('git', ['-C', dir, 'merge-base', '--is-ancestor', ancestor, descendant]);
    return true;
  } catch {
    return false;
  }
};

/** The landings that moved (or may have moved) each run's target: its own, or a nightly's landing. */
export async function landingsOf(stack: Stack, run: ChaosRun): Promise<LandingOutcome[]> {
  if (run.kind === 'landing') return [run.result as LandingOutcome];
  if (run.kind === 'nightly') {
    const landing = (run.result as NightlyOutcome).landing;
    return landing ? [(await awaitResult(stack, landing.id, 30_000)) as LandingOutcome] : [];
  }
  return [];
}

/**
 * Every target moved only by fast-forwards, each to the merged SHA of exactly one landing that
 * landed on it, whose tree every suite of that landing's gate passed on; every commit of the
 * landed branches is in the target's history (by subject: rebased copies keep it).
 */
export async function targetHistory(stack: Stack, runs: ChaosRun[]): Promise<string[]> {
  const problems: string[] = [];
  const byOrigin = new Map<string, { runs: ChaosRun[]; landings: LandingOutcome[] }>();
  for (const run of runs.filter((candidate) => candidate.target)) {
    const entry = byOrigin.get(run.repo.path) ?? { runs: [], landings: [] };
    entry.runs.push(run);
    entry.landings.push(...(await landingsOf(stack, run)));
    byOrigin.set(run.repo.path, entry);
  }
  for (const [origin, { runs: onOrigin, landings }] of byOrigin) {
    const names = onOrigin.map((run) => run.key).join(', ');
    const target = onOrigin[0]!.target!;
    const before = onOrigin[0]!.targetBefore!;
    const logFile = join(origin, 'logs', 'refs', 'heads', target);
    const updates = existsSync(logFile)
      ? readFileSync(logFile, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => {
            const [old, next] = line.split(' ') as [string, string];
            return { old, next };
          })
      : [];
    const landed = landings.filter((outcome) => outcome.status === 'landed');
    if (updates.length !== landed.length) problems.push(`${names}: ${target} was updated ${updates.length} time(s), by ${landed.length} landed landing(s)`);
    let previous = before;
    for (const { old, next } of updates) {
      if (old !== previous) problems.push(`${names}: an update of ${target} started from ${old}, not from its head then (${previous})`);
      if (!isAncestor(origin, old, next)) problems.push(`${names}: ${target} moved ${old} → ${next}, not a fast-forward`);
      const owners = landed.filter((outcome) => outcome.mergedSha === next);
      if (owners.length !== 1) problems.push(`${names}: ${target} moved to ${next}, the merged SHA of ${owners.length} landing(s)`);
      const tree = git(origin, 'rev-parse', `${next}^{tree}`);
      for (const outcome of owners) {
        const suites = [...new Set(outcome.gates.map((gate) => gate.suiteId))];
        const ungated = suites.filter((suite) => !outcome.gates.some((gate) => gate.suiteId === suite && gate.status === 'passed' && gate.treeSha === tree));
        if (suites.length === 0 || ungated.length > 0)
          problems.push(`${outcome.runId}: merged tree ${tree} was not passed by suite(s) ${ungated.join(', ') || '(none ran)'}`);
        if (outcome.treeSha !== tree) problems.push(`${outcome.runId}: its outcome's tree ${outcome.treeSha} is not the merged tree ${tree}`);
      }
      previous = next;
    }
    const head = git(origin, 'rev-parse', `refs/heads/${target}`);
    if (head !== previous) problems.push(`${names}: ${target} is at ${head}, not where its last logged update left it (${previous})`);
    // No commit lost: every commit of every landed branch is in the target's history.
    const subjects = new Set(git(origin, 'log', '--format=%s', `${before}..${head}`).split('\n'));
    for (const outcome of landed) {
      for (const { branch, sha } of outcome.heads) {
        for (const subject of git(origin, 'log', '--format=%s', `${before}..${sha}`).split('\n').filter(Boolean)) {
          if (!subjects.has(subject)) problems.push(`${outcome.runId}: commit "${subject}" of ${branch} is not in ${target}'s history`);
        }
      }
    }
  }
  return problems;
}

export interface ContainerCreate {
  run: string;
  role: string;
  step: string;
}

/**
 * Containers Docker creates with a `tarmac.run` label while the watch is on, from its live event
 * stream (the engine keeps only its last ~1000 events for a later read, and other suites share it).
 */
export class ContainerWatch {
  readonly creates: ContainerCreate[] = [];
  private constructor(private readonly stream: NodeJS.ReadableStream & { destroy(): void }) {}

  static async start(docker: Docker): Promise<ContainerWatch> {
    const stream = (await docker.getEvents({
      filters: JSON.stringify({ type: ['container'], event: ['create'], label: ['tarmac.run'] }),
    })) as NodeJS.ReadableStream & { destroy(): void };
    const watch = new ContainerWatch(stream);
    let pending = '';
    stream.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines.filter((text) => text.trim())) {
        const attributes = (JSON.parse(line) as { Actor: { Attributes: Record<string, string> } }).Actor.Attributes;
        watch.creates.push({
          run: attributes['tarmac.run'] ?? '',
          role: attributes['tarmac.role'] ?? '',
          step: attributes['tarmac.step'] ?? attributes['tarmac.session'] ?? '',
        });
      }
    });
    return watch;
  }

  /** Stops watching after a last moment for events on their way. */
  async stop(): Promise<ContainerCreate[]> {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    this.stream.destroy();
    return this.creates;
  }
}

/**
 * Which run of the pass made a container (the engine is shared: other suites' containers are not
 * the pass's), named by its key (a queue pair as one). A run's children (its fix loops and sessions)
 * label theirs with its id or one that starts with it; a nightly's fix loop and landing are named by
 * its outcome.
 */
export function ownerOf(runs: ChaosRun[], create: ContainerCreate): { id: string; name: string } | undefined {
  for (const run of runs) {
    const name = run.flow === 'queue' ? run.key.replace(/-[xy]$/, '') : run.key;
    const owners = [{ id: run.id!, name }];
    if (run.kind === 'nightly' && run.result) {
      const outcome = run.result as NightlyOutcome;
      if (outcome.fixLoop) owners.push({ id: outcome.fixLoop.id, name: `${name}/fix` });
      if (outcome.landing) owners.push({ id: outcome.landing.id, name: `${name}/landing` });
    }
    const owner = owners.find((candidate) => create.run === candidate.id || create.run.startsWith(`${candidate.id}.`));
    if (owner) return owner;
  }
  return undefined;
}

/**
 * The pass's containers counted per run (by key, a queue pair as one) and role, e.g.
 * `fixup-1 implementer` → 1. A run's children (its fix loops and sessions) carry its id or one
 * that starts with it; a nightly's fix loop and landing are named by its outcome.
 */
export function containerCounts(runs: ChaosRun[], creates: ContainerCreate[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const create of creates) {
    const owner = ownerOf(runs, create);
    if (!owner) continue;
    const key = `${owner.name} ${create.role}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

/** Containers of the pass's runs still on the engine (running or not). */
export async function containersLeft(docker: Docker, runs: ChaosRun[], creates: ContainerCreate[]): Promise<string[]> {
  const ours = new Set(creates.filter((create) => ownerOf(runs, create)).map((create) => create.run));
  const left = await docker.listContainers({ all: true, filters: JSON.stringify({ label: ['tarmac.run'] }) });
  return left.filter((info) => ours.has(info.Labels['tarmac.run'] ?? '')).map((info) => `${info.Names[0]} (${info.Labels['tarmac.run']}, ${info.State})`);
}

/** Paths a run's manifest lists (its workspaces and directories) that are still on disk, for every run in the data dir. */
export function workspacesLeft(dataDir: string): string[] {
  const runsDir = join(dataDir, 'runs');
  if (!existsSync(runsDir)) return [];
  const left: string[] = [];
  for (const run of readdirSync(runsDir)) {
    const manifestFile = join(runsDir, run, 'manifest.json');
    if (existsSync(manifestFile)) {
      const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { worktrees?: string[]; dirs?: string[] };
      left.push(...[...(manifest.worktrees ?? []), ...(manifest.dirs ?? [])].filter((path) => existsSync(path)));
    }
    // A workspace that no manifest lists is left too.
    if (existsSync(join(runsDir, run, 'worktree')) && !left.includes(join(runsDir, run, 'worktree'))) left.push(join(runsDir, run, 'worktree'));
  }
  return left;
}
