import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stripJsonComments } from '../../core/jsonc';

const table: { name: string; input: string; expected: unknown }[] = [
  { name: 'plain JSON', input: '{"a": [1, 2], "b": {"c": null}}', expected: { a: [1, 2], b: { c: null } } },
  { name: 'a line comment', input: '{\n  // the base\n  "image": "node:24" // trailing words\n}', expected: { image: 'node:24' } },
  { name: 'a line comment at the end without a newline', input: '{"a": 1} // end', expected: { a: 1 } },
  { name: 'a block comment over lines', input: '{ /* one\n two */ "a": /* inline */ 1 }', expected: { a: 1 } },
  { name: '"//" inside a string is kept', input: '{"url": "http://example.org/x"}', expected: { url: 'http://example.org/x' } },
  { name: '"/* */" inside a string is kept', input: '{"glob": "src/* keep */"}', expected: { glob: 'src/* keep */' } },
  { name: 'an escaped quote does not end the string', input: '{"say": "a \\"//quoted\\" b"} // gone', expected: { say: 'a "//quoted" b' } },
  { name: 'an escaped backslash ends just before the quote', input: '{"dir": "C:\\\\"} // gone', expected: { dir: 'C:\\' } },
  { name: 'a comma inside a string is not trailing', input: '{"list": "a,]"}', expected: { list: 'a,]' } },
  { name: 'a trailing comma in an object', input: '{"a": 1, "b": 2,}', expected: { a: 1, b: 2 } },
  { name: 'a trailing comma in an array', input: '{"a": [1, 2, ]}', expected: { a: [1, 2] } },
  { name: 'a trailing comma then a comment then the bracket', input: '{"a": [\n  "x", // last\n  /* none */\n]}', expected: { a: ['x'] } },
  { name: 'trailing commas at every depth', input: '{"a": {"b": ["c",],},}', expected: { a: { b: ['c'] } } },
  { name: 'a comma after a string value before a bracket', input: '["x",]', expected: ['x'] },
  { name: 'CRLF line ends', input: '{\r\n  "a": 1, // c\r\n}\r\n', expected: { a: 1 } },
  { name: 'a byte order mark', input: '\uFEFF{"a": 1}', expected: { a: 1 } },
  { name: 'a slash that starts no comment is left to JSON', input: '{"a": 1 / 2}', expected: SyntaxError },
  { name: 'an array of only a comma stays invalid', input: '[,]', expected: SyntaxError },
  { name: 'a doubled comma stays invalid', input: '[1,,]', expected: SyntaxError },
  { name: 'a comma after a key stays invalid', input: '{"a":,}', expected: SyntaxError },
];

describe('stripJsonComments', () => {
  for (const { name, input, expected } of table) {
    it(name, () => {
      const stripped = stripJsonComments(input);
      assert.ok(stripped.ok);
      assert.equal(stripped.json.length, input.length, 'the text keeps its length, so positions still point into the file');
      if (expected === SyntaxError) assert.throws(() => JSON.parse(stripped.json) as unknown, SyntaxError);
      else assert.deepEqual(JSON.parse(stripped.json), expected);
    });
  }
  it("keeps a block comment's line breaks, so what follows stays on its line", () => {
    const input = '{\n/* a\nb */\n"a": }';
    const stripped = stripJsonComments(input);
    assert.ok(stripped.ok);
    assert.equal(stripped.json, '{\n    \n    \n"a": }');
  });
  it('refuses a block comment that is never closed, naming where it opens', () => {
    assert.deepEqual(stripJsonComments('{"a": 1,\n  /* open'), { ok: false, message: 'has a /* comment that is not closed (it opens at line 2, column 3)' });
  });
  it('does not take "/*" inside a string for an unclosed comment', () => {
    assert.deepEqual(stripJsonComments('{"a": "/*"}'), { ok: true, json: '{"a": "/*"}' });
  });
});
