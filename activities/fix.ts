import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from '@temporalio/activity';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { durationPattern } from '../core/duration';
import { fieldName } from '../core/gate-file';
import { matchPlaybook, type Playbook } from '../core/playbooks';
import { defaultRecipesDir } from '../core/node/recipes';
import type { GroundingRules } from '../policies/grounding';
import { ConfinedPathError, lstatNoFollow, readFileNoFollow, writeFileNoFollow, type EntryKind } from './confined-fs';
import { automationGit, originGit } from './git';
import { runPaths } from './run-store';

const PlaybooksRecipeSchema = Type.Object({
  version: Type.Literal(1),
  description: Type.Optional(Type.String()),
  playbooks: Type.Array(
    Type.Object(
      {
        id: Type.String({ pattern: '^[a-z0-9-]+$' }),
        description: Type.Optional(Type.String()),
        signature: Type.String({ minLength: 1 }),
        kind: Type.Union([Type.Literal('make-target-from-script'), Type.Literal('make-target-typo'), Type.Literal('npm-script-from-make')]),
      },
      { additionalProperties: false },
    ),
  ),
  grounding: Type.Object({ groundedCommands: Type.Array(Type.String()), groundingFiles: Type.Array(Type.String()) }, { additionalProperties: false }),
  limits: Type.Object(
    { maxRepairs: Type.Integer({ minimum: 0, maximum: 10 }), maxToolIterations: Type.Integer({ minimum: 1 }), sessionTimeout: Type.String({ pattern: durationPattern }) },
    { additionalProperties: false },
  ),
});

/** recipes/playbooks.json, validated; errors name the file and the field. */
export interface FixLimits {
  maxRepairs: number;
  /** Tool calls one session may make through the gateway. */
  maxToolIterations: number;
  /** Timeout of one agent session of a fix loop, e.g. "20m". */
  sessionTimeout: string;
}

export function loadPlaybooks(dir: string = defaultRecipesDir): { playbooks: Playbook[]; grounding: GroundingRules; limits: FixLimits } {
  const data: unknown = JSON.parse(readFileSync(join(dir, 'playbooks.json'), 'utf8'));
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
async function playbookPatch(workspace: string, playbooks: Playbook[], output: string): Promise<{ patch: ReturnType<typeof matchPlaybook> } | { refused: string }> {
  const files = new Map<string, string | undefined>();
  for (;;) {
    let patch: ReturnType<typeof matchPlaybook>;
    try {
      patch = matchPlaybook(playbooks, output, (path) => {
        if (!files.has(path)) throw new NotReadYet(path);
        return files.get(path);
      });
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

export function createFixActivities({ dataDir, recipesDir }: { dataDir: string; recipesDir?: string }) {
  return {
    /** The fix-loop limits of recipes/playbooks.json. */
    limits: async (): Promise<FixLimits> => loadPlaybooks(recipesDir).limits,

    /**
     * Tries the playbooks on a failure's log: a matching signature whose preconditions
     * hold in the workspace gives a patch, written and committed here. No agent involved.
     * Branch content is untrusted: a link anywhere in a path the playbook reads or writes
     * (a committed `Makefile -> /etc/…`) means no playbook is applied, and the log says why.
     */
    applyPlaybook: async ({ runId, logRef }: { runId: string; logRef: string }): Promise<{ playbookId: string; summary: string; files: string[] } | null> => {
      const workspace = runPaths(dataDir, runId).worktree;
      const output = untimestamped(await readFile(join(dataDir, logRef), 'utf8').catch(() => ''));
      const found = await playbookPatch(workspace, loadPlaybooks(recipesDir).playbooks, output);
      if ('refused' in found) {
        note(`no playbook applied: ${found.refused}`, { runId });
        return null;
      }
      const patch = found.patch;
      if (!patch) return null;
      const paths = Object.keys(patch.files);
      for (const path of paths) {
        const seen = await inspect(workspace, path);
        if ('refused' in seen) {
          note(`no playbook applied: playbook ${patch.playbookId} would write ${seen.refused}`, { runId });
          return null;
        }
      }
      for (const [path, content] of Object.entries(patch.files)) await writeFileNoFollow(workspace, path, content);
      const git = automationGit(workspace);
      await git.raw(['add', '--', ...paths]);
      await git.raw(['-c', 'user.name=tarmac-playbook', '-c', 'user.email=playbook@tarmac.invalid', 'commit', '-q', '-m', `tarmac playbook ${patch.playbookId}: ${patch.summary}`]);
      return { playbookId: patch.playbookId, summary: patch.summary, files: paths };
    },

    /** The last lines of a log (for an agent's brief). */
    logTail: async ({ logRef, bytes = 4000 }: { logRef: string; bytes?: number }): Promise<string> => {
      const text = untimestamped(await readFile(join(dataDir, logRef), 'utf8').catch(() => ''));
      return text.slice(-bytes);
    },

    /** Files changed since `baseSha`, and pushes the fixes to a new run-owned branch (never forced). */
    publishFixes: async ({ runId, repo, baseSha, branch }: { runId: string; repo: string; baseSha: string; branch: string }): Promise<{ filesChanged: string[]; headSha: string; pushed: boolean }> => {
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
