import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gateFilePath } from '../../core/gate-file';
import {
  classifyApproval,
  gateFileDecision,
  gateFileProblem,
  gateFileQuestion,
  gateFileRefusal,
  type ApprovalAnswer,
  type GateFileApproval,
  type GateFileDecision,
  type GateFileFacts,
} from '../../policies/gate-file-change';

const facts = (changedPaths: string[], targetBlob: string | null, headBlob: string | null): GateFileFacts => ({ changedPaths, targetBlob, headBlob });

describe('gate-file change: which heads are asked about', () => {
  const table: { name: string; facts: GateFileFacts; approval?: GateFileApproval; expected: GateFileDecision }[] = [
    { name: 'untouched gate file', facts: facts(['src/a.ts'], 'T', 'T'), expected: { kind: 'unchanged' } },
    { name: 'no changes at all', facts: facts([], 'T', 'T'), expected: { kind: 'unchanged' } },
    { name: 'an edit', facts: facts([gateFilePath], 'T', 'H'), expected: { kind: 'ask', change: 'edits', blob: 'H' } },
    { name: 'a deletion', facts: facts([gateFilePath], 'T', null), expected: { kind: 'ask', change: 'deletes', blob: null } },
    { name: 'an addition (target had none)', facts: facts([gateFilePath], null, 'H'), expected: { kind: 'ask', change: 'adds', blob: 'H' } },
    {
      name: 'a rename away, listed without rename detection as both paths',
      facts: facts([gateFilePath, '.config/tarmac/old-gate.json', 'land-gate.json'], 'T', null),
      expected: { kind: 'ask', change: 'deletes', blob: null },
    },
    {
      name: 'a rename away the path list missed (only the new name): the objects still differ',
      facts: facts(['.config/tarmac/old-gate.json'], 'T', null),
      expected: { kind: 'ask', change: 'deletes', blob: null },
    },
    { name: 'a rename onto the path', facts: facts([gateFilePath, 'other.json'], 'T', 'O'), expected: { kind: 'ask', change: 'edits', blob: 'O' } },
    { name: 'a mode change only (same object, path listed)', facts: facts([gateFilePath], 'T', 'T'), expected: { kind: 'ask', change: 'edits', blob: 'T' } },
    { name: 'the approved version', facts: facts([gateFilePath], 'T', 'H'), approval: { blob: 'H' }, expected: { kind: 'approved', blob: 'H' } },
    { name: 'changed again after an approval', facts: facts([gateFilePath], 'T', 'H2'), approval: { blob: 'H' }, expected: { kind: 'ask', change: 'edits', blob: 'H2' } },
    { name: 'an approved deletion', facts: facts([gateFilePath], 'T', null), approval: { blob: null }, expected: { kind: 'approved', blob: null } },
    { name: 'an approved deletion does not approve an edit', facts: facts([gateFilePath], 'T', 'H'), approval: { blob: null }, expected: { kind: 'ask', change: 'edits', blob: 'H' } },
    { name: 'an approved edit does not approve a deletion', facts: facts([gateFilePath], 'T', null), approval: { blob: 'H' }, expected: { kind: 'ask', change: 'deletes', blob: null } },
    { name: 'an approval with nothing changed', facts: facts([], 'T', 'T'), approval: { blob: 'H' }, expected: { kind: 'unchanged' } },
  ];
  for (const { name, facts: input, approval, expected } of table) {
    it(name, () => {
      assert.deepEqual(gateFileDecision(input, approval), expected);
      // Verify refuses exactly what the workflow would ask about.
      assert.equal(gateFileProblem(input, approval) !== undefined, expected.kind === 'ask');
    });
  }
});

describe('gate-file change: only the vocabulary approves', () => {
  const table: { answer: string; expected: ApprovalAnswer }[] = [
    { answer: 'approve', expected: 'approved' },
    { answer: 'approved', expected: 'approved' },
    { answer: 'yes', expected: 'approved' },
    { answer: '  YES \n', expected: 'approved' },
    { answer: 'Approved', expected: 'approved' },
    { answer: '', expected: 'empty' },
    { answer: '   ', expected: 'empty' },
    { answer: 'ok sure', expected: 'not-an-approval' },
    { answer: 'approved by the gate owners', expected: 'not-an-approval' },
    { answer: 'yes.', expected: 'not-an-approval' },
    { answer: 'y', expected: 'not-an-approval' },
    { answer: 'no', expected: 'not-an-approval' },
    { answer: 'not approved', expected: 'not-an-approval' },
  ];
  for (const { answer, expected } of table) {
    it(`${JSON.stringify(answer)} → ${expected}`, () => assert.equal(classifyApproval(answer), expected));
  }
});

describe('gate-file change: what the operator reads', () => {
  it('the question names the file, the head and the approving words', () => {
    const question = gateFileQuestion('deletes', 'a'.repeat(40), 'After fixup round 1');
    assert.match(question, /^After fixup round 1, this landing deletes \.config\/tarmac\/land-gate\.json \(head a{12}\)/);
    assert.match(question, /"approve", "approved", "yes"/);
  });
  it('a refusal quotes the answer and says it is not an approval; an empty one says so', () => {
    assert.match(gateFileRefusal('ok sure').summary, /the answer "ok sure" is not an approval/);
    assert.match(gateFileRefusal('ok sure').summary, /nothing was merged$/);
    assert.equal(gateFileRefusal('  ').message, 'empty answer');
    assert.ok(gateFileRefusal('x'.repeat(5000)).summary.length < 500, 'a long answer is shortened');
  });
});
