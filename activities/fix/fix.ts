import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Context, log } from '@temporalio/activity';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { durationPattern } from '../../core/duration';
import { fieldName } from '../../core/gate-file';
import type { MakeDatabase } from '../../core/fix-types';
import { applyLineEdits } from '../../policies/line-edit';
import { matchPlaybook, playbookKinds, type Playbook } from '../../policies/playbooks';
import { defaultRecipesDir } from '../../core/node/recipes';
import type { GroundingRules } from '../../policies/grounding';
import { ConfinedPathError, lstatNoFollow, readFileNoFollow, writeFileNoFollow, type EntryKind } from '../stores/confined-fs';
import { automationGit, originGit } from '../git/git';
import { isRegular, treeEntries } from './grounding';
import { runPaths } from '../stores/run-store';

const PlaybooksRecipeSchema = Type.Object({
  version: Type.Literal(1),
  description: Type.Optional(Type.String()),
  playbooks: Type.Array(
    Type.Object(
      {
        id: Type.String({ pattern: '^[a-z0-9-]+$' }),
        description: Type.Optional(Type.String()),
        signature: Type.String({ minLength: 1 }),
        /** The matcher (policies/playbooks.ts) the signature's named groups go to. */
        kind: Type.Union(playbookKinds.map((kind) => Type.Literal(kind))),
      },
      { additionalProperties: false },
    ),
  ),
  grounding: Type.Object({ groundedCommands: Type.Array(Type.String()), groundingFiles: Type.Array(Type.String()) }, { additionalProperties: false }),
  limits: Type.Object(
    {
      maxRepairs: Type.Integer({ minimum: 0, maximum: 10 }),
      maxToolIterations: Type.Integer({ minimum: 1 }),
      sessionTimeout: Type.String({ pattern: durationPattern }),
    },
    { additionalProperties: false },
  ),
});

/** recipes/playbooks.json, validated; errors name the file and the field. */
interface FixLimits {
  maxRepairs: number;
  /** Tool calls one session may make through the gateway. */
  maxToolIterations: number;
  /** Timeout of one agent session of a fix loop, e.g. "20m". */
  sessionTimeout: string;
}

interface PlaybooksRecipe {
  playbooks: Playbook[];
  grounding: GroundingRules;
  limits: FixLimits;
}

/** recipes/playbooks.json from its file (default: the repository's recipes/). */
function loadPlaybooks(dir: string = defaultRecipesDir): PlaybooksRecipe {
  return playbooksFrom(JSON.parse(readFileSync(join(dir, 'playbooks.json'), 'utf8')));
}

/**
 * The one place playbook data becomes playbooks: the parsed recipes/playbooks.json (from its file,
 * or from the snapshot a run carries), checked — every playbook's `kind` a known matcher, every
 * signature a regular expression; errors name the file and the field.
 */
export function playbooksFrom(data: unknown): PlaybooksRecipe {
  const first = Value.Errors(PlaybooksRecipeSchema, data).First();
  if (first) throw new Error(`recipes/playbooks.json: ${fieldName(first.path)} ${first.message.toLowerCase()}`);
  for (const [index, playbook] of (data as { playbooks: Playbook[] }).playbooks.entries()) {
    try {
      new RegExp(playbook.signature);
    } catch (error) {
      throw new Error(`recipes/playbooks.json: playbooks[${index}].signature is not a valid regular expression: ${(error as Error).message}`);
    }
  }
  const recipe = data as { playbooks: Playbook[]; limits: FixLimits; grounding: GroundingRules };
  return { playbooks: recipe.playbooks, grounding: recipe.grounding, limits: recipe.limits };
}

/** A log line without Docker's timestamp prefix. */
const untimestamped = (text: string) => text.replace(/^\d{4}-\d\d-\d\dT[\d:.]+Z /gm, '');

/** Logs through the activity's logger when there is one (the activity may also be called directly). */
function note(message: string, meta: Record<string, unknown>): void {
  try {
    log.warn(message, meta);
  } catch {
    console.warn(message, meta);
  }
}

/**
 * What is at `path`, seen without following links; `refused` when a playbook may not
 * touch it: a link at any component, `.git`, a path outside the workspace.
 */
async function inspect(workspace: string, path: string): Promise<{ kind: EntryKind | undefined } | { refused: string }> {
  try {
    const kind = await lstatNoFollow(workspace, path);
    return kind === 'link' ? { refused: `${path}: it is a symbolic link` } : { kind };
  } catch (error) {
    if (!(error instanceof ConfinedPathError)) throw error;
    return error.code === 'missing' || error.code === 'not-directory' ? { kind: undefined } : { refused: error.message };
  }
}

/** Files a playbook reads are small (a Makefile, package.json); a larger one is refused. */
const maxPlaybookFileBytes = 1024 * 1024;

/** Most files of the tree a playbook looks among (near misses of a module path). */
const maxPlaybookTreeFiles = 20_000;

/** Thrown out of matchPlaybook's read for a path not read yet. */
class NotReadYet {
  constructor(readonly path: string) {}
}

/**
 * matchPlaybook reads the tree synchronously and which files it reads depends on what
 * it read, so it runs over a cache filled without following links: a pass stops at the
 * first path not read yet, that path is read, and the next pass goes one file further.
 * Only paths the playbooks really look at are read (and refused when they are links).
 */
async function playbookPatch(
  workspace: string,
  playbooks: Playbook[],
  output: string,
  make: MakeDatabase | null,
): Promise<{ patch: ReturnType<typeof matchPlaybook> } | { refused: string }> {
  const files = new Map<string, string | undefined>();
  // The workspace is the worker's own repository: its file list comes from git at its head.
  const listed = (await treeEntries(workspace, 'HEAD'))
    .filter(isRegular)
    .slice(0, maxPlaybookTreeFiles)
    .map((entry) => entry.path);
  const read = (path: string) => {
    if (!files.has(path)) throw new NotReadYet(path);
    return files.get(path);
  };
  for (;;) {
    let patch: ReturnType<typeof matchPlaybook>;
    try {
      patch = matchPlaybook(playbooks, output, { read, files: listed, make });
    } catch (error) {
      if (!(error instanceof NotReadYet)) throw error;
      const seen = await inspect(workspace, error.path);
      if ('refused' in seen) return seen;
      try {
        files.set(error.path, seen.kind === 'file' ? (await readFileNoFollow(workspace, error.path, maxPlaybookFileBytes)).toString('utf8') : undefined);
      } catch (failure) {
        if (failure instanceof ConfinedPathError) return { refused: failure.message };
        throw failure;
      }
      continue;
    }
    return { patch };
  }
}

/** The trailer of a playbook commit that names the activity (workflow run and activity id) that made it. */
const playbookTrailer = 'Tarmac-Playbook-Step';

/** The calling activity's retry-stable key and attempt; undefined outside a workflow's activity (tests calling it directly). */
function activityStep(): { key: string; attempt: number } | undefined {
  let info: ReturnType<typeof Context.current>['info'];
  try {
    info = Context.current().info;
  } catch {
    return undefined;
  }
  const run = info.workflowExecution;
  return run ? { key: `${run.workflowId}/${run.runId}/${info.activityId}`, attempt: info.attempt } : undefined;
}

/** What an earlier attempt of this very activity committed at HEAD, read back; null when HEAD is not its commit. */
async function playbookCommitAt(workspace: string, key: string): Promise<{ playbookId: string; summary: string; files: string[] } | null> {
  const git = automationGit(workspace);
  const message = await git.raw(['log', '-1', '--format=%B', 'HEAD']);
  if (!message.split('\n').some((line) => line.trim() === `${playbookTrailer}: ${key}`)) return null;
  const subject = /^tarmac playbook (\S+): (.*)$/m.exec(message);
  if (!subject) return null;
  const files = (await git.raw(['diff-tree', '--no-commit-id', '--name-only', '-r', 'HEAD'])).split('\n').filter(Boolean);
  return { playbookId: subject[1]!, summary: subject[2]!, files };
}

export function createFixActivities({ dataDir, recipesDir }: { dataDir: string; recipesDir?: string }) {
  return {
    /** The fix-loop limits of recipes/playbooks.json. */
    limits: async (): Promise<FixLimits> => loadPlaybooks(recipesDir).limits,

    /**
     * Tries the playbooks on a failure's log: a matching signature whose matcher's premise
     * holds in the workspace gives line edits, applied and committed here. No agent involved.
     * `make`: make's database from the loop's grounding facts (targets of included makefiles
     * too; without it the top makefile is read as text). `recipe`: the run's snapshot of
     * playbooks.json (without it, the live file).
     * Branch content is untrusted: a link anywhere in a path the playbook reads or writes
     * (a committed `Makefile -> /etc/…`) means no playbook is applied, and the log says why.
     */
    applyPlaybook: async ({
      runId,
      logRef,
      make = null,
      recipe,
    }: {
      runId: string;
      logRef: string;
      make?: MakeDatabase | null;
      recipe?: unknown;
    }): Promise<{ playbookId: string; summary: string; files: string[] } | null> => {
      const workspace = runPaths(dataDir, runId).worktree;
      const git = automationGit(workspace);
      // A retry (the worker died mid-call) must not apply the edit twice: the commit names the
      // activity that made it, and a half-written attempt (files written, no commit) is undone first.
      const step = activityStep();
      if (step) {
        const done = await playbookCommitAt(workspace, step.key);
        if (done) return done;
        if (step.attempt > 1) await git.raw(['reset', '-q', '--hard', 'HEAD']);
      }
      const output = untimestamped(await readFile(join(dataDir, logRef), 'utf8').catch(() => ''));
      const { playbooks } = recipe === undefined ? loadPlaybooks(recipesDir) : playbooksFrom(recipe);
      const found = await playbookPatch(workspace, playbooks, output, make);
      if ('refused' in found) {
        note(`no playbook applied: ${found.refused}`, { runId });
        return null;
      }
      const patch = found.patch;
      if (!patch) return null;
      const paths = [...new Set(patch.edits.map((edit) => edit.path))];
      const written = new Map<string, string>();
      for (const path of paths) {
        const seen = await inspect(workspace, path);
        if ('refused' in seen) {
          note(`no playbook applied: playbook ${patch.playbookId} would write ${seen.refused}`, { runId });
          return null;
        }
        // The edits are line edits checked against the file as it is: the playbook changes those lines, nothing else.
        const before = seen.kind === 'file' ? (await readFileNoFollow(workspace, path, maxPlaybookFileBytes)).toString('utf8') : undefined;
        const after =
          before === undefined
            ? undefined
            : applyLineEdits(
                before,
                patch.edits.filter((edit) => edit.path === path),
              );
        if (after === undefined) {
          note(`no playbook applied: playbook ${patch.playbookId}'s edit does not fit ${path}`, { runId });
          return null;
        }
        written.set(path, after);
      }
      for (const [path, content] of written) await writeFileNoFollow(workspace, path, content);
      await git.raw(['add', '--', ...paths]);
      const message = `tarmac playbook ${patch.playbookId}: ${patch.summary}${step ? `\n\n${playbookTrailer}: ${step.key}` : ''}`;
      await git.raw(['-c', 'user.name=tarmac-playbook', '-c', 'user.email=playbook@tarmac.invalid', 'commit', '-q', '-m', message]);
      return { playbookId: patch.playbookId, summary: patch.summary, files: paths };
    },

    /** The last lines of a log (for an agent's brief). */
    logTail: async ({ logRef, bytes = 4000 }: { logRef: string; bytes?: number }): Promise<string> => {
      const text = untimestamped(await readFile(join(dataDir, logRef), 'utf8').catch(() => ''));
      return text.slice(-bytes);
    },

    /** Files changed since `baseSha`, and pushes the fixes to a new run-owned branch (never forced). */
    publishFixes: async ({
      runId,
      repo,
      baseSha,
      branch,
    }: {
      runId: string;
      repo: string;
      baseSha: string;
      branch: string;
    }): Promise<{ filesChanged: string[]; headSha: string; pushed: boolean }> => {
      const git = originGit(runPaths(dataDir, runId).worktree, repo);
      const headSha = (await git.revparse(['HEAD'])).trim();
      const filesChanged = (await git.raw(['diff', '--name-only', `${baseSha}..${headSha}`])).split('\n').filter(Boolean);
      if (headSha === baseSha) return { filesChanged, headSha, pushed: false };
      const existing = (await git.listRemote([repo, `refs/heads/${branch}`])).trim().split(/\s+/)[0] ?? '';
      if (existing !== headSha) await git.raw(['push', '--quiet', repo, `${headSha}:refs/heads/${branch}`]);
      return { filesChanged, headSha, pushed: true };
    },
  };
}
