import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addPackageScript, applyLineEdits, appendLines } from '../../policies/line-edit';
import { nearMiss, pathNearness, typoDistance } from '../../policies/near-miss';

describe('nearMiss', () => {
  const table: { name: string; missing: string; defined: string[]; expected: string | undefined }[] = [
    { name: '- for _', missing: 'start-all', defined: ['build', 'start_all'], expected: 'start_all' },
    { name: 'case', missing: 'Build', defined: ['build', 'test'], expected: 'build' },
    { name: 'a swap of two letters is one typo', missing: 'biuld', defined: ['build', 'test'], expected: 'build' },
    { name: 'two typos in a long name', missing: 'serve-app', defined: ['serv-apps', 'lint'], expected: 'serv-apps' },
    { name: 'a colon for a dash', missing: 'start:server', defined: ['start-server'], expected: 'start-server' },
    { name: 'short names get no typos: up is no miss of ps', missing: 'up', defined: ['ps', 'down'], expected: undefined },
    { name: 'too far', missing: 'deploy', defined: ['build', 'test'], expected: undefined },
    { name: 'two equally near → no guess', missing: 'tests', defined: ['test', 'texts'], expected: undefined },
    { name: 'the nearer of two wins', missing: 'start-all', defined: ['start_all', 'start-al'], expected: 'start_all' },
    { name: 'a defined name is no miss', missing: 'build', defined: ['build'], expected: undefined },
  ];
  for (const { name, missing, defined, expected } of table) it(name, () => assert.equal(nearMiss(missing, defined)?.candidate, expected));
  it('typoDistance counts a transposition once', () =>
    assert.deepEqual([typoDistance('biuld', 'build'), typoDistance('abc', 'abc'), typoDistance('kitten', 'sitting')], [1, 0, 3]));
  it('pathNearness: per segment, two typos at most in all', () => {
    assert.equal(pathNearness('src/lib/formater', 'src/lib/formatter'), 1);
    assert.equal(pathNearness('src/lib/x', 'src/lib/y'), undefined, 'short segments get no typos');
    assert.equal(pathNearness('src/lib/formater', 'src/formatter'), undefined, 'segments differ in number');
    assert.equal(pathNearness('srx/lbi/formater', 'src/lib/formatter'), undefined, 'three typos');
  });
});

describe('line edits', () => {
  it('applies edits bottom up and checks the lines it replaces', () => {
    const text = 'a\nb\nc\n';
    assert.equal(
      applyLineEdits(text, [
        { path: 'f', at: 1, remove: ['b'], insert: ['B'] },
        { path: 'f', at: 3, remove: [], insert: ['d'] },
      ]),
      'a\nB\nc\nd\n',
    );
    assert.equal(applyLineEdits(text, [{ path: 'f', at: 1, remove: ['x'], insert: ['B'] }]), undefined, 'a line that is not what the edit expects');
    assert.equal(applyLineEdits('a\r\nb\r\n', [{ path: 'f', at: 1, remove: [], insert: ['x'] }]), 'a\r\nx\r\nb\r\n', 'CRLF kept');
  });
  it('appends after the last line, keeping one final newline', () => {
    assert.equal(applyLineEdits('a\n', [appendLines('f', 'a\n', ['b'])]), 'a\nb\n');
    assert.equal(applyLineEdits('a', [appendLines('f', 'a', ['b'])]), 'a\nb\n');
  });
  const scripts: { name: string; text: string; expected: string | undefined }[] = [
    {
      name: 'multi-line scripts: one line at the top',
      text: '{\n  "name": "x",\n  "scripts": {\n    "test": "node t.js"\n  }\n}\n',
      expected: '{\n  "name": "x",\n  "scripts": {\n    "dev": "node d.js",\n    "test": "node t.js"\n  }\n}\n',
    },
    {
      name: 'one-line scripts',
      text: '{"name":"x","scripts":{"test":"node t.js"}}',
      expected: '{"name":"x","scripts":{ "dev": "node d.js", "test":"node t.js"}}',
    },
    { name: 'empty scripts', text: '{\n  "scripts": {},\n  "name": "x"\n}\n', expected: '{\n  "scripts": { "dev": "node d.js" },\n  "name": "x"\n}\n' },
    { name: 'no scripts at all', text: '{\n  "name": "x"\n}\n', expected: '{\n  "scripts": { "dev": "node d.js" },\n  "name": "x"\n}\n' },
    { name: 'the script exists already → no edit', text: '{"scripts":{"dev":"x"}}', expected: undefined },
    { name: 'a layout a line edit cannot keep valid → no edit', text: '{"description": "\\"scripts\\": {", "name": "x"}', expected: undefined },
    { name: 'not JSON → no edit', text: '{ nope', expected: undefined },
  ];
  for (const { name, text, expected } of scripts) {
    it(`addPackageScript: ${name}`, () => {
      const edit = addPackageScript('package.json', text, 'dev', 'node d.js');
      assert.equal(edit && applyLineEdits(text, [edit]), expected);
      if (edit) assert.ok(edit.remove.length <= 1 && edit.insert.length === 1, 'one line');
    });
  }
});
