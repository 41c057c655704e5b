import { createHash } from 'node:crypto';
import { repoName, slug } from './landing-id';

/**
 * The id of the nightly schedule of a (repo, target): one schedule per pair, so a
 * repeated `POST /v1/schedules` finds the existing one. It is also the workflow id
 * prefix of its runs (Temporal appends the scheduled time). Safe in URLs.
 */
export function nightlyScheduleId(repo: string, target: string): string {
  const digest = createHash('sha256').update(JSON.stringify({ repo, target })).digest('hex').slice(0, 12);
  return `nightly.${slug(repoName(repo), 40)}.${slug(target, 40)}.${digest}`;
}
