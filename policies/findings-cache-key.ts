/**
 * The findings cache key: the aggregate tree (not the branch: findings about another
 * tree are worse than none), the reviewer's harness#model, and the panel's prompt
 * version. Pure; the path is safe as a file name.
 */
export interface FindingsCacheKey {
  treeSha: string;
  harnessModel: string;
  promptVersion: string;
}

export function findingsCachePath(key: FindingsCacheKey): string {
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(key.treeSha)) throw new Error(`not a tree SHA: ${key.treeSha}`);
  const reviewer = key.harnessModel.replace(/[^A-Za-z0-9._-]+/g, '_');
  const version = key.promptVersion.replace(/[^A-Za-z0-9._-]+/g, '_');
  return `${key.treeSha.slice(0, 2)}/${key.treeSha}/${reviewer}@${version}.json`;
}

export function sameKey(a: FindingsCacheKey, b: FindingsCacheKey): boolean {
  return a.treeSha === b.treeSha && a.harnessModel === b.harnessModel && a.promptVersion === b.promptVersion;
}
