/**
 * What the dashboard shows of environments (issue 24), derived from the API's answers: the host's
 * environments (GET /v1/environments) and a landing's use of them (its outcome's `environments`).
 * Pure, like model.ts: test/unit/dashboard.test.ts checks it as tables.
 */
import { formatBytes } from '../../core/byte-size';
import type { EgressEntry, EnvironmentUse, EnvironmentView as WireEnvironment } from '../../api/schemas';
import { humanDuration } from './model';

/** GET /v1/environments, the fields the page shows. */
export type EnvironmentView = Pick<WireEnvironment, 'key' | 'repo' | 'baseImage' | 'sizeBytes' | 'lastUsedAt' | 'buildMs' | 'usedBy' | 'builtBy' | 'egress'>;

/** One host a setup reached (or tried to), its connections added up. */
export interface EgressHost {
  /** `host:port`. */
  host: string;
  allowed: boolean;
  connections: number;
  /** Bytes both ways, as a person reads them. */
  traffic: string;
  /** Why it was refused (the first reason given). */
  reason?: string;
}

/** `3f9a0c1d2e4b`: a key as the step details name it (`ENV_CACHE=hit <key12>`). */
const shortKey = (key: string) => key.replace(/^sha256:/, '').slice(0, 12);

/** The hosts of an egress record, one per host, port and verdict, refused first, then by name. */
export function egressHosts(entries: readonly EgressEntry[]): EgressHost[] {
  const byHost = new Map<string, { host: string; allowed: boolean; connections: number; bytes: number; reason?: string }>();
  for (const entry of entries) {
    const id = `${entry.host}:${entry.port} ${entry.allowed}`;
    const seen = byHost.get(id) ?? {
      host: `${entry.host}:${entry.port}`,
      allowed: entry.allowed,
      connections: 0,
      bytes: 0,
      ...(entry.reason ? { reason: entry.reason } : {}),
    };
    seen.connections += 1;
    seen.bytes += entry.bytesUp + entry.bytesDown;
    byHost.set(id, seen);
  }
  return [...byHost.values()]
    .sort((a, b) => Number(a.allowed) - Number(b.allowed) || (a.host < b.host ? -1 : a.host > b.host ? 1 : 0))
    .map(({ bytes, ...rest }) => ({ ...rest, traffic: formatBytes(bytes) }));
}

interface EnvironmentRow {
  key: string;
  shortKey: string;
  repo: string;
  baseImage: string;
  size: string;
  lastUsedAt: string;
  build: string;
  builtBy: string;
  usedBy: string[];
  egress: EgressHost[];
}

/** The environments page: one row an environment, in the API's order (most recently used first). */
export function environmentRows(environments: readonly EnvironmentView[]): EnvironmentRow[] {
  return environments.map((entry) => ({
    key: entry.key,
    shortKey: shortKey(entry.key),
    repo: entry.repo,
    baseImage: entry.baseImage,
    size: formatBytes(entry.sizeBytes),
    lastUsedAt: entry.lastUsedAt,
    build: humanDuration(entry.buildMs),
    builtBy: entry.builtBy.runId,
    usedBy: [...entry.usedBy],
    egress: egressHosts(entry.egress),
  }));
}

interface EnvironmentUseRow {
  key: string;
  shortKey: string;
  /** The tree gated in it, else the commit that keyed it (10 characters). */
  tree: string;
  cache: 'hit' | 'miss';
  /** `built in 42 s` for a miss, `reused (built in 42 s)` for a hit, or why the build failed. */
  detail: string;
  failed: boolean;
  egress: EgressHost[];
}

/** A run page's environments panel: each tree's environment, ENV_CACHE and the hosts its setup reached. */
export function environmentUseRows(uses: readonly EnvironmentUse[] | undefined): EnvironmentUseRow[] {
  return (uses ?? []).map((use) => ({
    key: use.key,
    shortKey: shortKey(use.key),
    tree: (use.treeSha ?? use.commitSha).slice(0, 10),
    cache: use.cache,
    detail: use.failed
      ? `failed: ${use.failed}`
      : use.cache === 'hit'
        ? `reused (built in ${humanDuration(use.buildMs)})`
        : `built in ${humanDuration(use.buildMs)}`,
    failed: use.failed !== undefined,
    egress: egressHosts(use.egress),
  }));
}
