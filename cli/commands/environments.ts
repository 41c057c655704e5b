import { formatBytes } from '../../core/byte-size';
import type { EnvironmentView } from '../client';
import { ExitCode } from '../errors';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';
import { columns, second } from '../render';
import { repoArgument } from './land';

/** `3f9a0c1d2e4b`: an environment's key as its step details name it (`ENV_CACHE=hit <key12>`). */
const shortKey = (key: string) => key.replace(/^sha256:/, '').slice(0, 12);

/** `tarmac environments`: one environment a row, most recently used first (the API's order). */
export function environmentLines(environments: readonly EnvironmentView[]): string[] {
  if (environments.length === 0) return ["no environment is cached on the API's host"];
  return columns([
    ['KEY', 'REPO', 'SIZE', 'LAST USED', 'RUNS USING IT'],
    ...environments.map((entry) => [shortKey(entry.key), entry.repo, formatBytes(entry.sizeBytes), second(entry.lastUsedAt), entry.usedBy.join(', ') || '-']),
  ]);
}

/** `tarmac environments [--repo] [--json]` (GET /v1/environments). */
export async function environmentsCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('environments', args, { repo: { type: 'string' }, json: { type: 'boolean' } });
  positionals('environments', parsed.positionals, []);
  const { repo, json } = parsed.values;
  const environments = await context.client().environments(repo === undefined ? {} : { repo: repoArgument(repo, context.cwd) });
  if (json) context.stdout.write(`${JSON.stringify({ environments }, null, 2)}\n`);
  else writeLines(context.stdout, environmentLines(environments));
  return ExitCode.ok;
}
