import { createHash } from 'node:crypto';
import { repoName, slug } from './landing-id';

/** The workflow id of the suite-quarantine entity of one (repo, target): readable, with a digest of the exact pair. */
export function suiteQuarantineId(repo: string, target: string): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([repo, target]))
    .digest('hex')
    .slice(0, 12);
  return `quarantine.${slug(repoName(repo), 40)}.${slug(target, 40)}.${digest}`;
}
