import { createHash } from 'node:crypto';
import { readFile, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from '@temporalio/activity';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { gateCachePath, sameGateKey, type GateCacheKey } from '../../policies/gate-cache-key';
import { writeFileAtomic } from './run-store';

/** What a sealed entry keeps of a suite's run (its log is a file of its own beside it). */
export interface SealedGateResult {
  status: 'passed' | 'failed';
  exitCode: number | null;
  durationMs: number;
}

/** The step that ran the suite (a hit names it in the worker log; a retried step knows its own entry). */
export interface SealedBy {
  runId: string;
  step: string;
  hostId: string;
}

const KeySchema = Type.Object({ treeSha: Type.String(), suiteId: Type.String(), suiteDigest: Type.String(), imageId: Type.String() });

const SealedGateEntrySchema = Type.Object({
  schema: Type.Literal(1),
  key: KeySchema,
  result: Type.Object({
    status: Type.Union([Type.Literal('passed'), Type.Literal('failed')]),
    exitCode: Type.Union([Type.Integer(), Type.Null()]),
    durationMs: Type.Number({ minimum: 0 }),
  }),
  log: Type.Object({ sha256: Type.String(), bytes: Type.Integer({ minimum: 0 }) }),
  sealedBy: Type.Object({ runId: Type.String(), step: Type.String(), hostId: Type.String() }),
  sealedAt: Type.String(),
  digest: Type.String(),
});
type SealedGateEntry = Static<typeof SealedGateEntrySchema>;

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

function digestOf(entry: Pick<SealedGateEntry, 'key' | 'result' | 'log' | 'sealedBy'>): string {
  const { key, result, log: logFacts, sealedBy } = entry;
  const canonical = JSON.stringify({
    key: { treeSha: key.treeSha, suiteId: key.suiteId, suiteDigest: key.suiteDigest, imageId: key.imageId },
    result: { status: result.status, exitCode: result.exitCode, durationMs: result.durationMs },
    log: { sha256: logFacts.sha256, bytes: logFacts.bytes },
    sealedBy: { runId: sealedBy.runId, step: sealedBy.step, hostId: sealedBy.hostId },
  });
  return `sha256:${sha256(canonical)}`;
}

export type GateCacheLookup = { hit: { result: SealedGateResult; log: Buffer; sealedBy: SealedBy; sealedAt: string } } | { miss: string };

/**
 * The gate cache under `<dataDir>/cache/gates/`: per key a sealed entry (`.json`: the result, the
 * log's digest, who sealed it, a digest of all of it) and the suite's log (`.log`), both owned by
 * the cache (a run's cleanup never touches them). Every doubt is a miss: a missing, truncated,
 * unparsable, wrong-schema, wrong-key or wrong-digest entry, or a log that is missing or not the
 * one sealed, makes the suite run again; nothing unverified is ever a hit.
 */
export function createGateCache({ dataDir }: { dataDir: string }) {
  const root = join(dataDir, 'cache', 'gates');
  const paths = (key: GateCacheKey) => {
    const base = join(root, gateCachePath(key));
    return { entry: `${base}.json`, log: `${base}.log` };
  };
  return {
    root,
    lookup: async (key: GateCacheKey): Promise<GateCacheLookup> => {
      const where = paths(key);
      let entry: unknown;
      try {
        entry = JSON.parse(await readFile(where.entry, 'utf8'));
      } catch (error) {
        return {
          miss: (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no entry' : refused(where.entry, `unreadable entry: ${(error as Error).message}`),
        };
      }
      if (!Value.Check(SealedGateEntrySchema, entry)) return { miss: refused(where.entry, 'entry does not match the schema') };
      if (!sameGateKey(entry.key, key))
        return { miss: refused(where.entry, `entry is for another key (${entry.key.treeSha.slice(0, 12)} ${entry.key.suiteId})`) };
      if (entry.digest !== digestOf(entry)) return { miss: refused(where.entry, 'entry digest does not match its content') };
      let logContent: Buffer;
      try {
        logContent = await readFile(where.log);
      } catch (error) {
        return { miss: refused(where.log, `its log is unreadable: ${(error as Error).message}`) };
      }
      if (logContent.length !== entry.log.bytes || sha256(logContent) !== entry.log.sha256)
        return { miss: refused(where.log, 'its log is not the one sealed') };
      // A hit keeps the entry young: retention (activities/janitor/retention.ts) counts from its last use.
      const now = new Date();
      await Promise.all([utimes(where.entry, now, now), utimes(where.log, now, now)]).catch(() => undefined);
      return { hit: { result: entry.result, log: logContent, sealedBy: entry.sealedBy, sealedAt: entry.sealedAt } };
    },

    /** Seals a suite's result and its log: the log first, then the entry naming its digest (each temp → fsync → rename). */
    seal: async (key: GateCacheKey, result: SealedGateResult, logContent: Buffer, sealedBy: SealedBy): Promise<{ path: string }> => {
      const where = paths(key);
      await writeFileAtomic(where.log, logContent);
      const sealed = { key, result, log: { sha256: sha256(logContent), bytes: logContent.length }, sealedBy };
      const entry: SealedGateEntry = { schema: 1, ...sealed, sealedAt: new Date().toISOString(), digest: digestOf(sealed) };
      await writeFileAtomic(where.entry, `${JSON.stringify(entry, null, 2)}\n`);
      return { path: where.entry };
    },
  };
}

function refused(path: string, reason: string): string {
  log.warn('gate cache entry refused; the suite runs again', { path, reason });
  return reason;
}
