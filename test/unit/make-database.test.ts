import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { findRule, parseMakeDatabase, ruleTargets, textualMakeTargets } from '../../policies/make-database';

// A real `make -p` print-out (GNU Make 4.3 in the runner image) of fixtures/make-database: a
// Makefile including mk/run.mk, a target-specific variable, two targets on one line, a rule made
// by $(eval), a target spelled through a variable, and a pattern rule.
const fixtures = join(__dirname, 'fixtures', 'make-database');
const database = readFileSync(join(fixtures, 'database.txt'), 'utf8');
const makefile = readFileSync(join(fixtures, 'Makefile'), 'utf8');
const runMk = readFileSync(join(fixtures, 'mk', 'run.mk'), 'utf8');

describe('parseMakeDatabase', () => {
  const parsed = parseMakeDatabase(database)!;
  const byName = new Map(parsed.targets.map((target) => [target.name, target]));

  it('lists the makefiles make read, the top one first (included ones too)', () => assert.deepEqual(parsed.makefiles, ['Makefile', 'mk/run.mk']));
  it('sees every target, those of the included makefile and those $(eval) and variables made', () =>
    assert.deepEqual([...byName.keys()].sort(), ['all', 'build', 'gen-eval', 'gen-var', 'lint', 'start_all', 'stop', 'test']));
  const table: { name: string; target: string; expected: { file: string; line: number } | undefined }[] = [
    { name: 'a target of the included makefile, with its recipe line there', target: 'start_all', expected: { file: 'mk/run.mk', line: 4 } },
    { name: 'a target with a target-specific variable: the rule, not the variable', target: 'build', expected: { file: 'Makefile', line: 10 } },
    { name: 'a target without a recipe has no place', target: 'all', expected: undefined },
    { name: 'two targets of one rule share its recipe', target: 'lint', expected: { file: 'Makefile', line: 13 } },
  ];
  for (const { name, target, expected } of table) it(name, () => assert.deepEqual(byName.get(target)?.recipe, expected));
  it('leaves out what make marks "Not a target", special targets, our own goal and patterns', () => {
    for (const name of ['Makefile', 'mk/run.mk', '.PHONY', '.DEFAULT', '.SUFFIXES', 'tarmac-database', '%.o']) assert.equal(byName.has(name), false, name);
  });
  it('no database in the text (make missing, or failing before printing) → undefined', () => {
    assert.equal(parseMakeDatabase('sh: 1: make: not found\n'), undefined);
    assert.equal(parseMakeDatabase(''), undefined);
  });
});

describe('findRule', () => {
  const table: { name: string; text: string; target: string; recipeLine?: number; expected: { line: number; after: number } | undefined }[] = [
    { name: 'from the recipe line make gave, the rule above it', text: runMk, target: 'start_all', recipeLine: 4, expected: { line: 2, after: 4 } },
    {
      name: 'a rule with a target-specific variable above it: the rule line itself',
      text: makefile,
      target: 'build',
      recipeLine: 10,
      expected: { line: 8, after: 10 },
    },
    { name: 'an inline recipe (`t: ; cmd`) is its own rule line', text: makefile, target: 'gen-var', recipeLine: 20, expected: undefined },
    { name: 'without a recipe line, the first rule naming it', text: makefile, target: 'all', expected: { line: 5, after: 6 } },
    { name: 'one of two targets on a rule line', text: makefile, target: 'lint', recipeLine: 13, expected: { line: 11, after: 13 } },
    {
      name: 'a recipe line whose rule names another target → undefined (make and the text disagree)',
      text: runMk,
      target: 'stop',
      recipeLine: 4,
      expected: undefined,
    },
    { name: 'a rule continued with a backslash', text: 'all: a \\\n  b\n\techo\n\nx:\n', target: 'all', recipeLine: 3, expected: { line: 0, after: 3 } },
  ];
  for (const { name, text, target, recipeLine, expected } of table) {
    it(name, () => {
      const rule = findRule(text, target, recipeLine);
      assert.deepEqual(rule && { line: rule.line, after: rule.after }, expected);
    });
  }
});

describe('ruleTargets and textualMakeTargets', () => {
  const table: { text: string; expected: string[] | undefined }[] = [
    { text: 'build: src', expected: ['build'] },
    { text: 'a b: c', expected: ['a', 'b'] },
    { text: 'c::', expected: ['c'] },
    { text: 'X := a:b', expected: undefined },
    { text: 'X = a:b', expected: undefined },
    { text: 'build: CFLAGS += -O2', expected: undefined },
    { text: '\techo a: b', expected: undefined },
    { text: '# t: x', expected: undefined },
    { text: 'include mk/run.mk', expected: undefined },
  ];
  for (const { text, expected } of table) it(JSON.stringify(text), () => assert.deepEqual(ruleTargets(text), expected));
  it('the rules of one makefile as text: no special targets, no variables, no patterns', () => {
    assert.deepEqual(textualMakeTargets(makefile).sort(), ['all', 'build', 'lint', 'test']);
  });
});
