/**
 * Validates a branch name with the rules of `git check-ref-format --branch`, as a
 * pure function so the API can reject bad names before anything starts. Returns
 * the reason the name is invalid, or undefined when it is a valid branch name.
 */
export function branchNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'must not be empty';
  if (name.length > 255) return 'must be at most 255 characters';
  if (name.startsWith('-')) return 'must not start with "-"';
  if (name === '@') return 'must not be "@"';
  if (name.startsWith('/') || name.endsWith('/')) return 'must not start or end with "/"';
  if (name.endsWith('.')) return 'must not end with "."';
  if (name.includes('..')) return 'must not contain ".."';
  if (name.includes('//')) return 'must not contain "//"';
  if (name.includes('@{')) return 'must not contain "@{"';
  // Control characters, space and the characters git reserves for revision syntax.
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return 'must not contain spaces, control characters or any of ~ ^ : ? * [ \\';
  for (const component of name.split('/')) {
    if (component.startsWith('.')) return 'must not have a path component starting with "."';
    if (component.endsWith('.lock')) return 'must not have a path component ending with ".lock"';
  }
  if (name.startsWith('refs/')) return 'must be a branch name, not a full ref (drop "refs/heads/")';
  return undefined;
}
