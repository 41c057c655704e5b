import { join } from 'node:path';
import type { HarnessAdapter } from '../../core/harnesses/types';
import { checkSessionResult, readResultBlock, resultFence, type SessionResult } from '../../core/session-result';
import type { SessionRole } from '../../core/session-types';
import { ConfinedPathError, readFileNoFollow } from '../stores/confined-fs';
import { writeFileAtomic } from '../stores/run-store';

/** A result file larger than this is not a result. */
const maxResultBytes = 1024 * 1024;

/** What an attempt delivered: its result, or why there is none. */
interface DeliveredResult {
  delivered?: SessionResult;
  resultProblem?: string;
}

/**
 * Reads what the agent handed back: `out/result.json` for a harness that writes one (read as a
 * regular file, never through a link), else the fenced block of its last message on stdout (then
 * kept as `result.json` beside the attempt).
 */
export async function readDeliveredResult(input: {
  adapter: HarnessAdapter;
  role: SessionRole;
  dir: string;
  outDir: string;
  stdout: string;
}): Promise<DeliveredResult> {
  const { adapter, role, dir, outDir, stdout } = input;
  if (adapter.output === 'result-file') return readResultFile(outDir);
  const parsed = adapter.parse(stdout);
  const block = parsed.ok ? readResultBlock(parsed.result.summary) : undefined;
  if (!parsed.ok) return { resultProblem: parsed.problem };
  if (!block!.ok) return { resultProblem: block!.problem };
  if (role === 'reviewer' && !block!.found && parsed.result.status === 'ok') {
    return { resultProblem: `the reviewer's last message has no ${resultFence} block: its findings cannot be read` };
  }
  const delivered = { ...parsed.result, summary: block!.summary, ...block!.fields };
  await writeFileAtomic(join(dir, 'result.json'), `${JSON.stringify(delivered, null, 2)}\n`);
  return { delivered };
}

/** out/ is the agent's: the result is read as a regular file, never through a link. */
async function readResultFile(outDir: string): Promise<DeliveredResult> {
  let text: string;
  try {
    text = (await readFileNoFollow(outDir, 'result.json', maxResultBytes)).toString('utf8');
  } catch (error) {
    return {
      resultProblem:
        error instanceof ConfinedPathError && error.code === 'missing' ? 'result.json is missing' : `result.json is refused: ${(error as Error).message}`,
    };
  }
  try {
    const check = checkSessionResult(JSON.parse(text));
    return check.ok ? { delivered: check.result } : { resultProblem: check.problem };
  } catch (error) {
    return { resultProblem: `result.json is not valid JSON: ${(error as Error).message}` };
  }
}
