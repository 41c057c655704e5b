import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/** The worker's settings for repository environments (issue 24; activities/environments/environments.ts). */
export interface EnvironmentConfig {
  /**
   * `TARMAC_SETUP_ENV`: `NAME=value` entries (space or newline separated) every environment setup
   * gets, e.g. your registry's URL (`npm_config_registry=…`, `PIP_INDEX_URL=…`). The only worker
   * values a setup sees: the worker's own environment (model keys, tokens) never enters one.
   */
  setupEnv: Record<string, string>;
  /**
   * `TARMAC_EGRESS_CA`: a CA bundle (PEM) setups trust for TLS through the egress gateway (a
   * TLS-inspecting proxy's CA). Default: the host's system bundle when there is one.
   */
  egressCa?: string;
  /** `TARMAC_ENV_MAX_BYTES`, default `4g`: the most an environment's setup may write (its workspace is a tmpfs of this size). */
  envMaxBytes: number;
  /** `TARMAC_ENV_CACHE_MAX`, default `20g`: the host's environments beyond this go, least recently used first (never one a run still holds). */
  envCacheMaxBytes: number;
}

/** `4g`, `512m`, `100k`, `1073741824`: bytes; undefined when malformed. */
function parseBytes(text: string): number | undefined {
  const match = /^([0-9]{1,13})([kmgt]?)$/i.exec(text.trim());
  if (!match) return undefined;
  const unit = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[match[2]!.toLowerCase() as '' | 'k' | 'm' | 'g' | 't'];
  return Number(match[1]) * unit;
}

/** Names a setup's environment may not take from the operator: the gateway's own and Tarmac's. */
const reservedName = /^(TARMAC_|HOME$|(HTTPS?|NO|ALL)_PROXY$|(https?|no|all)_proxy$|npm_config_(https_)?proxy$)/;

/** Reads the environment settings, pushing each problem (naming the variable) onto `problems`. */
export function readEnvironmentConfig(env: NodeJS.ProcessEnv, problems: string[]): EnvironmentConfig {
  const setupEnv: Record<string, string> = {};
  for (const entry of (env.TARMAC_SETUP_ENV ?? '').split(/\s+/).filter(Boolean)) {
    const at = entry.indexOf('=');
    const name = at > 0 ? entry.slice(0, at) : '';
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) problems.push(`TARMAC_SETUP_ENV: "${entry}" must be NAME=value (a name of letters, digits and _)`);
    else if (reservedName.test(name))
      problems.push(`TARMAC_SETUP_ENV: ${name} is set by Tarmac itself (the egress gateway's proxy, HOME, TARMAC_*); leave it out`);
    else setupEnv[name] = entry.slice(at + 1);
  }
  const ca = env.TARMAC_EGRESS_CA?.trim();
  if (ca && !existsSync(ca)) problems.push(`TARMAC_EGRESS_CA: ${ca} does not exist (a PEM CA bundle for setups' TLS)`);
  const size = (name: string, fallback: string): number => {
    const textValue = env[name]?.trim() || fallback;
    const bytes = parseBytes(textValue);
    if (bytes === undefined || bytes < 1024 ** 2) {
      problems.push(`${name}: "${textValue}" must be a size of at least 1m, like 4g, 512m or 1073741824`);
      return parseBytes(fallback)!;
    }
    return bytes;
  };
  return {
    setupEnv,
    ...(ca ? { egressCa: resolve(ca) } : {}),
    envMaxBytes: size('TARMAC_ENV_MAX_BYTES', '4g'),
    envCacheMaxBytes: size('TARMAC_ENV_CACHE_MAX', '20g'),
  };
}
