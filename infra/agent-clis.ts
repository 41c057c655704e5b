import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import pins from './agent-clis.json';

export type AgentCli = 'claude-code' | 'codex';

function platform(): { arch: string; triple: string } {
  if (process.arch === 'x64') return { arch: 'x64', triple: 'x86_64' };
  if (process.arch === 'arm64') return { arch: 'arm64', triple: 'aarch64' };
  throw new Error(`no pinned agent CLIs for ${process.platform}-${process.arch}`);
}

/** The per-user cache of fetched packages: `$TARMAC_CACHE_DIR/pkgs`, default `~/.cache/tarmac/pkgs`. */
export function agentCliCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.TARMAC_CACHE_DIR ?? join(homedir(), '.cache', 'tarmac'), 'pkgs');
}

/** The pinned version of a CLI and where `scripts/fetch-agent-clis.sh` unpacks its binary. */
export function pinnedAgentCli(name: AgentCli, env: NodeJS.ProcessEnv = process.env): { version: string; spec: string; bin: string } {
  const { arch, triple } = platform();
  const pin = pins[name];
  const fill = (text: string) => text.replaceAll('{arch}', arch).replaceAll('{triple}', triple);
  return { version: pin.version, spec: fill(pin.spec), bin: join(agentCliCacheDir(env), `${name}-${pin.version}-linux-${arch}`, fill(pin.bin)) };
}

/** The cached binary of a pinned CLI, or `undefined` when it has not been fetched. */
export function cachedAgentCli(name: AgentCli, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const { bin } = pinnedAgentCli(name, env);
  try {
    accessSync(bin, constants.X_OK);
    return bin;
  } catch {
    return undefined;
  }
}
