import { createHash } from 'node:crypto';
import type { BranchHead } from '../types';

/** `text` reduced to `[A-Za-z0-9._-]`, not starting with a dot or dash, at most `max` characters. */
export function slug(text: string, max: number): string {
  const cleaned = text.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._-]+/, '');
  return cleaned.slice(0, max) || 'x';
}

/** The readable name of a repository: the last path segment without `.git`. */
export function repoName(repo: string): string {
  const last = repo.replace(/\/+$/, '').split(/[/:]/).pop() ?? repo;
  return last.replace(/\.git$/, '') || 'repo';
}

/**
 * The workflow id of a landing, from its business key: the same repo, target and
 * branch heads always give the same id, so a repeated request finds the existing
 * run instead of starting a second one. Safe in URLs, file names and container names.
 */
export function landingId(repo: string, target: string, heads: BranchHead[]): string {
  const key = JSON.stringify({ repo, target, heads: heads.map(({ branch, sha }) => [branch, sha]) });
  const digest = createHash('sha256').update(key).digest('hex').slice(0, 12);
  return `land.${slug(repoName(repo), 40)}.${slug(target, 40)}.${digest}`;
}

const retrySuffix = /\.retry-([1-9][0-9]*)$/;

/**
 * The workflow id of the retry of a landing that did not land: the first run's id with the
 * attempt's number, `<first id>.retry-<n>` (the first run is attempt 1). Deterministic, so
 * asking twice to retry the same run finds the retry the first ask started instead of starting a
 * second one; the retried run keeps its id and its history.
 */
export function retryLandingId(retried: string): { id: string; attempt: number; first: string } {
  const match = retrySuffix.exec(retried);
  const first = match ? retried.slice(0, match.index) : retried;
  const attempt = (match ? Number(match[1]) : 1) + 1;
  return { id: `${first}.retry-${attempt}`, attempt, first };
}
