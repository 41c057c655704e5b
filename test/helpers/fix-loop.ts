import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FixOutcome } from '../../core/fix-types';
import { createFixtureRepo, type Files } from '../../infra/fixture-repo';
import { git } from './git';
import type { Stack } from './stack';
import { runResult } from './runs';

/**
 * Starts a fix loop on a fresh repository of `files` (branch `main`, the request's other fields from
 * `body`) and waits until it completes: its outcome, the origin's path, the commit it started from.
 */
export async function fixLoop(
  stack: Pick<Stack, 'api'>,
  files: Files,
  body: Record<string, unknown>,
): Promise<{ outcome: FixOutcome; repoPath: string; base: string; id: string }> {
  const repo = createFixtureRepo({ base: files });
  const base = git(repo.path, 'rev-parse', 'main');
  const created = await stack.api('POST', '/v1/fix-loops', { repo: repo.url, branch: 'main', ...body });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const outcome = (await runResult(stack, created.body.id, 'the fix loop')) as FixOutcome;
  return { outcome, repoPath: repo.path, base, id: created.body.id as string };
}

/**
 * Runs a command in the runner image on a branch's (or commit's) tree of the origin, network none,
 * as the gate would: its exit status and its output (stdout and stderr together).
 */
export function runOnRef(repoPath: string, ref: string, command: string): { status: number; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tarmac-run-on-ref-'));
  try {
    execFileSync('sh', ['-c', `git -C ${repoPath} archive ${ref} | tar -x -C ${dir} && chown -R 1000:1000 ${dir}`]);
    const output = execFileSync(
      'docker',
      [
        'run',
        '--rm',
        '--network',
        'none',
        '--user',
        '1000:1000',
        '-e',
        'HOME=/tmp',
        '-v',
        `${dir}:/workspace`,
        '-w',
        '/workspace',
        'tarmac/runner:bookworm',
        'sh',
        '-c',
        `${command} 2>&1`,
      ],
      { encoding: 'utf8' },
    );
    return { status: 0, output };
  } catch (error) {
    return { status: (error as { status?: number }).status ?? 1, output: String((error as { stdout?: string }).stdout ?? '') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
