import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { playbooksFrom } from '../../activities/fix/fix';
import type { MakeDatabase } from '../../core/fix-types';
import { applyLineEdits } from '../../policies/line-edit';
import { matchers, matchPlaybook, playbookKinds, type PlaybookTree } from '../../policies/playbooks';

const { playbooks } = playbooksFrom(JSON.parse(readFileSync(join(__dirname, '../../recipes/playbooks.json'), 'utf8')));
const tree = (files: Record<string, string>, make: MakeDatabase | null = null): PlaybookTree => ({
  read: (path) => files[path],
  files: Object.keys(files),
  make,
});
const database = (makefiles: string[], targets: MakeDatabase['targets']): MakeDatabase => ({ source: 'make', makefiles, targets });

const noRule = (target: string) => `make: *** No rule to make target '${target}'.  Stop.`;
const missingScript = (script: string) => `npm error Missing script: "${script}"\nnpm error\nnpm error To see a list of scripts, run:\nnpm error   npm run`;
const requireTrace = (specifier: string, importer: string) =>
  `node:internal/modules/cjs/loader:1080\n  throw err;\n  ^\n\nError: Cannot find module '${specifier}'\nRequire stack:\n- ${importer}\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1077:15)\n`;

/**
 * Each row: a failure's output, a tree, and the exact files after the playbook's edits (or none:
 * the premise is false). Rows are grouped by matcher; every matcher has premise-false rows.
 */
const table: {
  name: string;
  output: string;
  files: Record<string, string>;
  make?: MakeDatabase;
  expected?: { playbookId: string; after: Record<string, string> };
}[] = [
  // make-target-from-script
  {
    name: 'missing make target whose script exists → a rule running it, appended to the top makefile',
    output: noRule('up'),
    files: { Makefile: 'test:\n\ttrue\n', 'scripts/up.sh': 'echo up\n' },
    expected: { playbookId: 'make-target-from-script', after: { Makefile: 'test:\n\ttrue\n\n.PHONY: up\nup:\n\tsh scripts/up.sh\n' } },
  },
  {
    name: 'premise false: the target is defined in an included makefile (make says so) → no script wiring',
    output: noRule('up'),
    files: { Makefile: 'include mk/run.mk\n', 'mk/run.mk': 'up:\n\ttrue\n', 'scripts/up.sh': 'echo up\n' },
    make: database(['Makefile', 'mk/run.mk'], [{ name: 'up', recipe: { file: 'mk/run.mk', line: 2 } }]),
  },
  { name: 'premise false: no script, no near miss → no playbook', output: noRule('deploy'), files: { Makefile: 'test:\n\ttrue\n' } },
  // make-target-typo
  {
    name: 'a prerequisite that is a typo of an existing target → that word on that line',
    output: "make: *** No rule to make target 'biuld', needed by 'all'.  Stop.",
    files: { Makefile: 'all: biuld\n\ttrue\nbuild:\n\ttrue\n' },
    expected: { playbookId: 'make-target-typo', after: { Makefile: 'all: build\n\ttrue\nbuild:\n\ttrue\n' } },
  },
  {
    name: 'the typo in a rule of an included makefile, the real target in another',
    output: "make: *** No rule to make target 'compile_css', needed by 'assets'.  Stop.",
    files: {
      Makefile: 'include mk/assets.mk\ncompile-css:\n\ttrue\n',
      'mk/assets.mk': '# assets\nassets: compile_css bundle\n\t@echo assets\nbundle:\n\ttrue\n',
    },
    make: database(
      ['Makefile', 'mk/assets.mk'],
      [
        { name: 'compile-css', recipe: { file: 'Makefile', line: 3 } },
        { name: 'assets', recipe: { file: 'mk/assets.mk', line: 3 } },
        { name: 'bundle', recipe: { file: 'mk/assets.mk', line: 5 } },
      ],
    ),
    expected: { playbookId: 'make-target-typo', after: { 'mk/assets.mk': '# assets\nassets: compile-css bundle\n\t@echo assets\nbundle:\n\ttrue\n' } },
  },
  {
    name: 'premise false: the missing prerequisite is no near miss of any target → no playbook',
    output: "make: *** No rule to make target 'deploy', needed by 'all'.  Stop.",
    files: { Makefile: 'all: deploy\n\ttrue\nbuild:\n\ttrue\n' },
  },
  // make-target-alias
  {
    name: 'the target the user ran is a near miss (-/_) of one defined in an included makefile → an alias next to it, in that file',
    output: noRule('start-all'),
    files: { Makefile: 'include mk/run.mk\n\nbuild:\n\t@echo build\n', 'mk/run.mk': '.PHONY: start_all\nstart_all: build\n\t@echo started\n\nstop:\n\ttrue\n' },
    make: database(
      ['Makefile', 'mk/run.mk'],
      [
        { name: 'build', recipe: { file: 'Makefile', line: 4 } },
        { name: 'start_all', recipe: { file: 'mk/run.mk', line: 3 } },
        { name: 'stop', recipe: { file: 'mk/run.mk', line: 6 } },
      ],
    ),
    expected: {
      playbookId: 'make-target-alias',
      after: { 'mk/run.mk': '.PHONY: start_all\nstart_all: build\n\t@echo started\n\n.PHONY: start-all\nstart-all: start_all\n\nstop:\n\ttrue\n' },
    },
  },
  {
    name: "without make's database, the top makefile read as text (case differs)",
    output: noRule('Test'),
    files: { Makefile: 'test:\n\tnode t.js\n' },
    expected: { playbookId: 'make-target-alias', after: { Makefile: 'test:\n\tnode t.js\n\n.PHONY: Test\nTest: test\n' } },
  },
  {
    name: 'premise false: two targets equally near → no guess',
    output: noRule('tests'),
    files: { Makefile: 'test:\n\ttrue\ntexts:\n\ttrue\n' },
  },
  {
    name: 'premise false: the near target is known to make but spelled through a variable in the text → no alias',
    output: noRule('gen-al'),
    files: { Makefile: 'NAME := gen\n$(NAME)-all: ; true\n' },
    make: database(['Makefile'], [{ name: 'gen-all', recipe: { file: 'Makefile', line: 2 } }]),
  },
  // npm-script-from-make
  {
    name: 'an npm script a makefile calls is missing, and its script file exists → one line in package.json',
    output: missingScript('typecheck'),
    files: {
      Makefile: 'check:\n\tnpm run typecheck\n',
      'package.json': '{\n  "name": "x",\n  "scripts": {\n    "test": "node test.js"\n  }\n}\n',
      'scripts/typecheck.js': '',
    },
    expected: {
      playbookId: 'npm-script-from-make',
      after: { 'package.json': '{\n  "name": "x",\n  "scripts": {\n    "typecheck": "node scripts/typecheck.js",\n    "test": "node test.js"\n  }\n}\n' },
    },
  },
  {
    name: 'the caller is an included makefile',
    output: missingScript('typecheck'),
    files: {
      Makefile: 'include mk/ci.mk\n',
      'mk/ci.mk': 'check:\n\tnpm run typecheck && npm test\n',
      'package.json': '{"scripts":{"test":"node t.js"}}',
      'scripts/typecheck.sh': 'true\n',
    },
    make: database(['Makefile', 'mk/ci.mk'], [{ name: 'check', recipe: { file: 'mk/ci.mk', line: 2 } }]),
    expected: { playbookId: 'npm-script-from-make', after: { 'package.json': '{"scripts":{ "typecheck": "sh scripts/typecheck.sh", "test":"node t.js"}}' } },
  },
  {
    name: 'premise false: no makefile calls it → no wiring (and no near miss either)',
    output: missingScript('typecheck'),
    files: { Makefile: 'check:\n\ttrue\n', 'package.json': '{"scripts":{}}', 'scripts/typecheck.js': '' },
  },
  {
    name: 'premise false: a makefile calls it but no script file exists → no wiring to a script that does not exist',
    output: missingScript('typecheck'),
    files: { Makefile: 'check:\n\tnpm run typecheck\n', 'package.json': '{"scripts":{"lint":"eslint ."}}' },
  },
  // npm-script-alias
  {
    name: 'a missing npm script with a near miss → an alias script',
    output: missingScript('serve_app'),
    files: { 'package.json': '{\n  "name": "x",\n  "scripts": {\n    "serve-app": "node server.js"\n  }\n}\n' },
    expected: {
      playbookId: 'npm-script-alias',
      after: { 'package.json': '{\n  "name": "x",\n  "scripts": {\n    "serve_app": "npm run serve-app",\n    "serve-app": "node server.js"\n  }\n}\n' },
    },
  },
  { name: 'premise false: no script near the missing one', output: missingScript('deploy'), files: { 'package.json': '{"scripts":{"test":"node t.js"}}' } },
  { name: 'premise false: no package.json', output: missingScript('serve_app'), files: { Makefile: 'serve-app:\n\ttrue\n' } },
  // module-path-near-miss (require)
  {
    name: 'require() of a path that does not resolve, one near-miss file → the specifier on its line',
    output: requireTrace('./lib/formater', '/workspace/src/index.js'),
    files: {
      'src/index.js': "const format = require('./lib/formater');\nconsole.log(format('x'));\n",
      'src/lib/formatter.js': 'module.exports = (s) => s;\n',
      'package.json': '{}',
    },
    expected: { playbookId: 'require-path-near-miss', after: { 'src/index.js': "const format = require('./lib/formatter');\nconsole.log(format('x'));\n" } },
  },
  {
    name: 'a directory with index.js is a CommonJS near miss too',
    output: requireTrace('../utls', '/app/src/cli/main.js'),
    files: { 'src/cli/main.js': 'const u = require("../utls");\n', 'src/utils/index.js': 'module.exports = {};\n' },
    expected: { playbookId: 'require-path-near-miss', after: { 'src/cli/main.js': 'const u = require("../utils");\n' } },
  },
  {
    name: 'premise false: the path resolves (an extension CommonJS adds) → not a path problem',
    output: requireTrace('./lib/format', '/workspace/src/index.js'),
    files: { 'src/index.js': "require('./lib/format');\n", 'src/lib/format.js': '', 'src/lib/formats.js': '' },
  },
  {
    name: 'premise false: two files equally near → no guess',
    output: requireTrace('./lib/formt', '/workspace/src/index.js'),
    files: { 'src/index.js': "require('./lib/formt');\n", 'src/lib/format.js': '', 'src/lib/forms.js': '' },
  },
  {
    name: 'premise false: a package, not a relative path',
    output: requireTrace('expresss', '/workspace/src/index.js'),
    files: { 'src/index.js': "require('expresss');\n", 'src/express.js': '' },
  },
  // module-path-near-miss (ES modules)
  {
    name: 'ERR_MODULE_NOT_FOUND: the import resolving to the missing file is fixed (extension kept)',
    output:
      "node:internal/errors:496\nError [ERR_MODULE_NOT_FOUND]: Cannot find module '/workspace/src/lib/formater.js' imported from /workspace/src/index.js\n    at new NodeError",
    files: {
      'src/index.js': "import { format } from './lib/formater.js';\nimport fs from 'node:fs';\n",
      'src/lib/formatter.js': 'export const format = (s) => s;\n',
    },
    expected: { playbookId: 'import-path-near-miss', after: { 'src/index.js': "import { format } from './lib/formatter.js';\nimport fs from 'node:fs';\n" } },
  },
  {
    name: 'premise false: an ES module import needs the exact file, and the only near file is a directory index',
    output: "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/workspace/src/utls' imported from /workspace/src/index.js",
    files: { 'src/index.js': "import u from './utls';\n", 'src/utils/index.js': '' },
  },
  { name: 'output with no known signature → no playbook', output: 'Error: expected 2 to equal 3', files: { Makefile: 'test:\n\ttrue\n' } },
];

describe('playbooks (recipes/playbooks.json through core/playbooks.ts)', () => {
  for (const { name, output, files, make, expected } of table) {
    it(name, () => {
      const patch = matchPlaybook(playbooks, output, tree(files, make ?? null));
      if (!expected) return assert.equal(patch, undefined, JSON.stringify(patch));
      assert.ok(patch, 'a playbook matched');
      assert.equal(patch.playbookId, expected.playbookId);
      const touched = [...new Set(patch.edits.map((edit) => edit.path))].sort();
      assert.deepEqual(touched, Object.keys(expected.after).sort(), 'only the files the playbook repairs are touched');
      for (const [path, after] of Object.entries(expected.after))
        assert.equal(
          applyLineEdits(
            files[path]!,
            patch.edits.filter((edit) => edit.path === path),
          ),
          after,
        );
    });
  }

  it('every matcher has a playbook in the recipe, and every playbook a matcher', () => {
    assert.deepEqual([...new Set(playbooks.map((playbook) => playbook.kind))].sort(), [...playbookKinds].sort());
  });

  it('a matcher whose edit would rewrite a file is never returned (edits are line-level)', () => {
    const rewrite = { edits: [{ path: 'Makefile', at: 0, remove: ['a', 'b', 'c'], insert: ['x'] }], summary: 'rewrite' };
    const original = matchers['make-target-from-script'];
    (matchers as Record<string, unknown>)['make-target-from-script'] = () => rewrite;
    try {
      assert.equal(matchPlaybook(playbooks, noRule('up'), tree({ Makefile: 'a\nb\nc\n' })), undefined);
    } finally {
      (matchers as Record<string, unknown>)['make-target-from-script'] = original;
    }
  });

  it('the recipe is checked: an unknown matcher or a bad signature is refused, naming the field', () => {
    const recipe = JSON.parse(readFileSync(join(__dirname, '../../recipes/playbooks.json'), 'utf8')) as { playbooks: { kind: string; signature: string }[] };
    recipe.playbooks[1]!.kind = 'rewrite-everything';
    assert.throws(() => playbooksFrom(recipe), /recipes\/playbooks\.json: playbooks\[1\]\.kind/);
    recipe.playbooks[1]!.kind = 'make-target-typo';
    recipe.playbooks[2]!.signature = '(unclosed';
    assert.throws(() => playbooksFrom(recipe), /playbooks\[2\]\.signature is not a valid regular expression/);
  });
});
