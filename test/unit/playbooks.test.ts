import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { matchPlaybook, type Playbook } from '../../core/playbooks';

const { playbooks } = JSON.parse(readFileSync(join(__dirname, '../../recipes/playbooks.json'), 'utf8')) as { playbooks: Playbook[] };
const tree = (files: Record<string, string>) => (path: string) => files[path];

const table: { name: string; output: string; files: Record<string, string>; expected?: { playbookId: string; file: string; contains: RegExp } }[] = [
  {
    name: 'missing make target whose script exists → wire it',
    output: "make: *** No rule to make target 'up'.  Stop.",
    files: { Makefile: 'test:\n\ttrue\n', 'scripts/up.sh': 'echo up\n' },
    expected: { playbookId: 'make-target-from-script', file: 'Makefile', contains: /^up:\n\tsh scripts\/up\.sh$/m },
  },
  {
    name: 'missing make target without a script and no close name → no playbook',
    output: "make: *** No rule to make target 'deploy'.  Stop.",
    files: { Makefile: 'test:\n\ttrue\n' },
  },
  {
    name: 'a prerequisite that is a typo of an existing target → fix the reference',
    output: "make: *** No rule to make target 'biuld', needed by 'all'.  Stop.",
    files: { Makefile: 'all: biuld\n\ttrue\nbuild:\n\ttrue\n' },
    expected: { playbookId: 'make-target-typo', file: 'Makefile', contains: /^all: build$/m },
  },
  {
    name: 'npm script a Makefile target calls is missing, and its script file exists → add it',
    output: 'npm error Missing script: "typecheck"',
    files: { Makefile: 'check:\n\tnpm run typecheck\n', 'package.json': '{"name":"x","scripts":{"test":"node test.js"}}', 'scripts/typecheck.js': '' },
    expected: { playbookId: 'npm-script-from-make', file: 'package.json', contains: /"typecheck": "node scripts\/typecheck\.js"/ },
  },
  {
    name: 'missing npm script not called by the Makefile → no playbook',
    output: 'npm error Missing script: "typecheck"',
    files: { Makefile: 'check:\n\ttrue\n', 'package.json': '{"scripts":{}}', 'scripts/typecheck.js': '' },
  },
  { name: 'output with no known signature → no playbook', output: 'Error: expected 2 to equal 3', files: { Makefile: 'test:\n\ttrue\n' } },
];

describe('matchPlaybook', () => {
  for (const { name, output, files, expected } of table) {
    it(name, () => {
      const patch = matchPlaybook(playbooks, output, tree(files));
      if (!expected) return assert.equal(patch, undefined);
      assert.ok(patch, 'a playbook matched');
      assert.equal(patch.playbookId, expected.playbookId);
      assert.match(patch.files[expected.file]!, expected.contains);
      assert.deepEqual(Object.keys(patch.files), [expected.file], 'only the file the playbook repairs is touched');
    });
  }
});
