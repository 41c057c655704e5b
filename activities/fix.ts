import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { durationPattern } from '../core/duration';
import { fieldName } from '../core/gate-file';
import { matchPlaybook, type Playbook } from '../core/playbooks';
import { defaultRecipesDir } from '../core/recipes';
import type { GroundingRules } from '../workflows/policies/grounding';
import { automationGit, handToContainerUser } from './git';
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
const untimestamped = (log: string) => log.replace(/^\d{4}-\d\d-\d\dT[\d:.]+Z /gm, '');

export function createFixActivities({ dataDir, recipesDir }: { dataDir: string; recipesDir?: string }) {
  return {
    /** The fix-loop limits of recipes/playbooks.json. */
    limits: async (): Promise<FixLimits> => loadPlaybooks(recipesDir).limits,

    /**
     * Tries the playbooks on a failure's log: a matching signature whose preconditions
     * hold in the workspace gives a patch, written and committed here. No agent involved.
     */
    applyPlaybook: async ({ runId, logRef }: { runId: string; logRef: string }): Promise<{ playbookId: string; summary: string; files: string[] } | null> => {
      const workspace = runPaths(dataDir, runId).worktree;
      const output = untimestamped(await readFile(join(dataDir, logRef), 'utf8').catch(() => ''));
      const read = (path: string) => {
        const full = resolve(workspace, path);
        if (relative(workspace, full).startsWith('..') || !existsSync(full)) return undefined;
        return readFileSync(full, 'utf8');
      };
      const patch = matchPlaybook(loadPlaybooks(recipesDir).playbooks, output, read);
      if (!patch) return null;
      for (const [path, content] of Object.entries(patch.files)) {
        await mkdir(dirname(join(workspace, path)), { recursive: true });
        await writeFile(join(workspace, path), content);
      }
      const git = automationGit(workspace);
      await git.raw(['add', '--', ...Object.keys(patch.files)]);
      await git.raw(['-c', 'user.name=tarmac-playbook', '-c', 'user.email=playbook@tarmac.invalid', 'commit', '-q', '-m', `tarmac playbook ${patch.playbookId}: ${patch.summary}`]);
      await handToContainerUser(workspace);
      return { playbookId: patch.playbookId, summary: patch.summary, files: Object.keys(patch.files) };
    },

    /** The last lines of a log (for an agent's brief). */
    logTail: async ({ logRef, bytes = 4000 }: { logRef: string; bytes?: number }): Promise<string> => {
      const text = untimestamped(await readFile(join(dataDir, logRef), 'utf8').catch(() => ''));
      return text.slice(-bytes);
    },

    /** Files changed since `baseSha`, and pushes the fixes to a new run-owned branch (never forced). */
    publishFixes: async ({ runId, repo, baseSha, branch }: { runId: string; repo: string; baseSha: string; branch: string }): Promise<{ filesChanged: string[]; headSha: string; pushed: boolean }> => {
      const git = automationGit(runPaths(dataDir, runId).worktree);
      const headSha = (await git.revparse(['HEAD'])).trim();
      const filesChanged = (await git.raw(['diff', '--name-only', `${baseSha}..${headSha}`])).split('\n').filter(Boolean);
      if (headSha === baseSha) return { filesChanged, headSha, pushed: false };
      const existing = (await git.listRemote([repo, `refs/heads/${branch}`])).trim().split(/\s+/)[0] ?? '';
      if (existing !== headSha) await git.raw(['push', '--quiet', repo, `${headSha}:refs/heads/${branch}`]);
      return { filesChanged, headSha, pushed: true };
    },
  };
}
