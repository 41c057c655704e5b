import { resolve } from 'node:path';
import { branchNameProblem } from '../core/refs';
import { isLocalPathText, parseRepoLocation } from '../core/repo-location';
import { filterValueProblem } from '../core/visibility-query';
import { invalid } from './errors';

/** A repo named by a reader the way runs record it (canonical; a relative path from the API's directory); no allow-list: reading starts nothing. */
export function canonicalRepo(repo: string, field = 'repo'): string {
  const problem = filterValueProblem(repo);
  if (problem) throw invalid(field, problem);
  const parsed = parseRepoLocation(isLocalPathText(repo) ? resolve(repo) : repo);
  if (!parsed.ok) throw invalid(field, parsed.problem);
  return parsed.canonical;
}

/** A target branch named by a reader: a valid branch name, safe in a visibility query. */
export function checkedTarget(target: string, field = 'target'): string {
  const problem = filterValueProblem(target) ?? branchNameProblem(target);
  if (problem) throw invalid(field, problem);
  return target;
}
