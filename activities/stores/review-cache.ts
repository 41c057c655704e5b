import { createHash } from 'node:crypto';
import { readFile, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { log } from '@temporalio/activity';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { FindingSchema, type Finding } from '../../core/session-result';
import { findingsCachePath, sameKey, type FindingsCacheKey } from '../../policies/findings-cache-key';
import { writeFileAtomic } from './run-store';

/** What a sealed entry keeps of a reviewer's report. */
export interface SealedReport {
  summary: string;
  findings: Finding[];
  usage: { inputTokens: number; outputTokens: number; costUsd: number };
}

const SealedEntrySchema = Type.Object({
  schema: Type.Literal(1),
  key: Type.Object({ treeSha: Type.String(), harnessModel: Type.String(), promptVersion: Type.String() }),
  report: Type.Object({
    summary: Type.String(),
    findings: Type.Array(FindingSchema),
    usage: Type.Object({ inputTokens: Type.Number(), outputTokens: Type.Number(), costUsd: Type.Number() }),
  }),
  sealedAt: Type.String(),
  digest: Type.String(),
});

function digestOf(key: FindingsCacheKey, report: SealedReport): string {
  const canonical = JSON.stringify({
    key: { treeSha: key.treeSha, harnessModel: key.harnessModel, promptVersion: key.promptVersion },
    report: { summary: report.summary, findings: report.findings, usage: report.usage },
  });
  return `sha256:${createHash('sha256').update(canonical).digest('hex')}`;
}

interface RestoreInput {
  treeSha: string;
  promptVersion: string;
  reviewers: string[];
}

interface RestoreResult {
  restored: { harnessModel: string; report: SealedReport }[];
  misses: { harnessModel: string; reason: string }[];
}

/**
 * The findings cache under `<dataDir>/cache/reviews/`. Every doubt is a miss:
 * a missing, truncated, unparsable, wrong-schema, wrong-key or wrong-digest entry
 * makes that reviewer run again; nothing unverified is ever a hit.
 */
export function createReviewCacheActivities({ dataDir }: { dataDir: string }) {
  const root = join(dataDir, 'cache', 'reviews');
  return {
    restore: async ({ treeSha, promptVersion, reviewers }: RestoreInput): Promise<RestoreResult> => {
      const result: RestoreResult = { restored: [], misses: [] };
      for (const harnessModel of reviewers) {
        const key = { treeSha, harnessModel, promptVersion };
        const path = join(root, findingsCachePath(key));
        let reason: string | undefined;
        let entry: unknown;
        try {
          entry = JSON.parse(await readFile(path, 'utf8'));
        } catch (error) {
          reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no entry' : `unreadable entry: ${(error as Error).message}`;
        }
        if (!reason) {
          if (!Value.Check(SealedEntrySchema, entry)) reason = 'entry does not match the schema';
          else if (!sameKey(entry.key, key)) reason = `entry is for another key (${entry.key.treeSha.slice(0, 12)} ${entry.key.harnessModel})`;
          else if (entry.digest !== digestOf(entry.key, entry.report)) reason = 'entry digest does not match its content';
          else {
            result.restored.push({ harnessModel, report: entry.report });
            // A hit keeps the entry young: retention (activities/janitor/retention.ts) counts from its last use.
            const now = new Date();
            await utimes(path, now, now).catch(() => undefined);
          }
        }
        if (reason) {
          if (reason !== 'no entry') log.warn('findings cache entry refused; the reviewer runs again', { path, reason });
          result.misses.push({ harnessModel, reason });
        }
      }
      return result;
    },

    /** Seals one reviewer's report the moment it arrives: temp file, fsync, rename, with a content digest. */
    seal: async ({ key, report }: { key: FindingsCacheKey; report: SealedReport }): Promise<{ path: string }> => {
      const path = join(root, findingsCachePath(key));
      const entry = { schema: 1, key, report, sealedAt: new Date().toISOString(), digest: digestOf(key, report) };
      await writeFileAtomic(path, `${JSON.stringify(entry, null, 2)}\n`);
      return { path };
    },
  };
}
