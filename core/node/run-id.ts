import { createHash } from 'node:crypto';
import { repoName, slug } from './landing-id';

/**
 * The workflow id of a standalone run (`review`, `fix`) from its business key: the same
 * key always gives the same id, so a repeated request finds the existing run. The repo
 * name is cut to 40 characters like in landing ids: an id must stay a valid path
 * parameter of `GET /v1/runs/:id` (at most 200 characters of `[A-Za-z0-9._-]`) whatever
 * the repository is called.
 */
export function runId(kind: 'review' | 'fix', repo: string, key: unknown[]): string {
  const digest = createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 12);
  return `${kind}.${slug(repoName(repo), 40)}.${digest}`;
}
