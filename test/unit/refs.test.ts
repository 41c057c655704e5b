import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { branchNameProblem } from '../../core/refs';

const cases: { name: string; input: string; valid: boolean }[] = [
  { name: 'simple', input: 'main', valid: true },
  { name: 'with slash', input: 'feature/login', valid: true },
  { name: 'with dots inside', input: 'release-1.2', valid: true },
  { name: 'empty', input: '', valid: false },
  { name: 'parent traversal', input: '../x', valid: false },
  { name: 'leading dash (option injection)', input: '-x', valid: false },
  { name: 'double dot range', input: 'a..b', valid: false },
  { name: 'space', input: 'a b', valid: false },
  { name: 'tilde', input: 'a~1', valid: false },
  { name: 'caret', input: 'a^', valid: false },
  { name: 'colon', input: 'a:b', valid: false },
  { name: 'glob', input: 'a*', valid: false },
  { name: 'bracket', input: 'a[0]', valid: false },
  { name: 'backslash', input: 'a\\b', valid: false },
  { name: 'reflog syntax', input: 'a@{1}', valid: false },
  { name: 'bare at', input: '@', valid: false },
  { name: 'lock suffix', input: 'x.lock', valid: false },
  { name: 'component starting with dot', input: 'a/.hidden', valid: false },
  { name: 'trailing slash', input: 'a/', valid: false },
  { name: 'leading slash', input: '/a', valid: false },
  { name: 'double slash', input: 'a//b', valid: false },
  { name: 'trailing dot', input: 'a.', valid: false },
  { name: 'control character', input: 'a\u0001b', valid: false },
  { name: 'full ref', input: 'refs/heads/main', valid: false },
];

describe('branchNameProblem', () => {
  for (const { name, input, valid } of cases) {
    it(name, () => {
      const problem = branchNameProblem(input);
      if (valid) assert.equal(problem, undefined);
      else assert.equal(typeof problem, 'string', `"${input}" should be refused`);
    });
  }
});
