import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gateFilePath } from '../../core/gate-file';
import {
  approvalKey,
  changedSubject,
  classifyApproval,
  gateFileDecision,
  gateFileProblem,
  gateFileQuestion,
  gateFileRefusal,
  type ApprovalAnswer,
  type ChangedFile,
  type DeclarationFileFacts,
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
    {
      name: 'changed again after an approval',
      facts: facts([gateFilePath], 'T', 'H2'),
      approval: { blob: 'H' },
      expected: { kind: 'ask', change: 'edits', blob: 'H2' },
    },
    { name: 'an approved deletion', facts: facts([gateFilePath], 'T', null), approval: { blob: null }, expected: { kind: 'approved', blob: null } },
    {
      name: 'an approved deletion does not approve an edit',
      facts: facts([gateFilePath], 'T', 'H'),
      approval: { blob: null },
      expected: { kind: 'ask', change: 'edits', blob: 'H' },
    },
    {
      name: 'an approved edit does not approve a deletion',
      facts: facts([gateFilePath], 'T', null),
      approval: { blob: 'H' },
      expected: { kind: 'ask', change: 'deletes', blob: null },
    },
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

const devcontainer = '.devcontainer/devcontainer.json';
const dockerfile = 'env/Dockerfile';
/** Facts with declaration files: the gate file at `gate` ([target, head]), each other file likewise. */
const withFiles = (changedPaths: string[], gate: [string | null, string | null], files: Record<string, [string | null, string | null]>): GateFileFacts => ({
  changedPaths,
  targetBlob: gate[0],
  headBlob: gate[1],
  declarationFiles: Object.entries(files).map(([path, [targetBlob, headBlob]]): DeclarationFileFacts => ({ path, targetBlob, headBlob })),
});
/** The usual declaration files of a target whose gate file names env/Dockerfile: no devcontainer, the Dockerfile at D. */
const declared = (dockerfileHead: string | null, devcontainerHead: string | null = null) => ({
  [devcontainer]: [null, devcontainerHead] as [string | null, string | null],
  [dockerfile]: ['D', dockerfileHead] as [string | null, string | null],
});
const ask = (change: ChangedFile['change'], blob: string, files: ChangedFile[]): GateFileDecision => ({ kind: 'ask', change, blob, files });

describe("gate-file change: the environment's declaration files are asked about like the gate file", () => {
  const table: { name: string; facts: GateFileFacts; approval?: GateFileApproval; expected: GateFileDecision }[] = [
    { name: 'declaration files present and untouched', facts: withFiles(['src/a.ts'], ['T', 'T'], declared('D')), expected: { kind: 'unchanged' } },
    { name: 'facts read before environments (no declarationFiles): as before', facts: facts(['src/a.ts'], 'T', 'T'), expected: { kind: 'unchanged' } },
    {
      name: 'only the gate file changes, declaration files untouched: the same decision and blob as always',
      facts: withFiles([gateFilePath], ['T', 'H'], declared('D')),
      expected: { kind: 'ask', change: 'edits', blob: 'H' },
    },
    {
      name: 'the gate file alone, approved by its object as always',
      facts: withFiles([gateFilePath], ['T', 'H'], declared('D')),
      approval: { blob: 'H' },
      expected: { kind: 'approved', blob: 'H' },
    },
    {
      name: 'a branch that edits only the Dockerfile the target names is asked about',
      facts: withFiles([dockerfile], ['T', 'T'], declared('D2')),
      expected: ask('edits', `${dockerfile}=D2`, [{ path: dockerfile, change: 'edits' }]),
    },
    {
      name: 'a Dockerfile edit the path list missed: the objects still differ',
      facts: withFiles([], ['T', 'T'], declared('D2')),
      expected: ask('edits', `${dockerfile}=D2`, [{ path: dockerfile, change: 'edits' }]),
    },
    {
      name: 'a mode change of the Dockerfile only (same object, path listed)',
      facts: withFiles([dockerfile], ['T', 'T'], declared('D')),
      expected: ask('edits', `${dockerfile}=D`, [{ path: dockerfile, change: 'edits' }]),
    },
    {
      name: 'a branch that deletes the Dockerfile',
      facts: withFiles([dockerfile], ['T', 'T'], declared(null)),
      expected: ask('deletes', `${dockerfile}=null`, [{ path: dockerfile, change: 'deletes' }]),
    },
    {
      name: 'a branch that only adds .devcontainer/devcontainer.json (a repository with no environment yet) is asked about',
      facts: withFiles([devcontainer], ['T', 'T'], { [devcontainer]: [null, 'C'] }),
      expected: ask('adds', `${devcontainer}=C`, [{ path: devcontainer, change: 'adds' }]),
    },
    {
      name: 'the gate file and the Dockerfile: both named, the gate file first, one combined blob',
      facts: withFiles([dockerfile, gateFilePath], ['T', 'H'], declared('D2')),
      expected: ask('edits', `${gateFilePath}=H;${dockerfile}=D2`, [
        { path: gateFilePath, change: 'edits' },
        { path: dockerfile, change: 'edits' },
      ]),
    },
    {
      name: 'the devcontainer edited and the Dockerfile added: every changed file by path; the first names the change',
      facts: withFiles([devcontainer, dockerfile], ['T', 'T'], { [devcontainer]: ['C', 'C2'], [dockerfile]: [null, 'D'] }),
      expected: ask('edits', `${devcontainer}=C2;${dockerfile}=D`, [
        { path: devcontainer, change: 'edits' },
        { path: dockerfile, change: 'adds' },
      ]),
    },
    {
      name: "the head's gate file names another Dockerfile it adds: the gate file and the new Dockerfile",
      facts: withFiles([gateFilePath, 'other/Dockerfile'], ['T', 'H'], { ...declared('D'), 'other/Dockerfile': [null, 'O'] }),
      expected: ask('edits', `${gateFilePath}=H;other/Dockerfile=O`, [
        { path: gateFilePath, change: 'edits' },
        { path: 'other/Dockerfile', change: 'adds' },
      ]),
    },
    {
      name: 'the gate file deleted with the Dockerfile: the combined blob says null for it',
      facts: withFiles([gateFilePath, dockerfile], ['T', null], declared(null)),
      expected: ask('deletes', `${gateFilePath}=null;${dockerfile}=null`, [
        { path: gateFilePath, change: 'deletes' },
        { path: dockerfile, change: 'deletes' },
      ]),
    },
    {
      name: 'an approved Dockerfile edit',
      facts: withFiles([dockerfile], ['T', 'T'], declared('D2')),
      approval: { blob: `${dockerfile}=D2` },
      expected: { kind: 'approved', blob: `${dockerfile}=D2` },
    },
    {
      name: 'approving one Dockerfile version, then changing it again: asked again',
      facts: withFiles([dockerfile], ['T', 'T'], declared('D3')),
      approval: { blob: `${dockerfile}=D2` },
      expected: ask('edits', `${dockerfile}=D3`, [{ path: dockerfile, change: 'edits' }]),
    },
    {
      name: 'an approved Dockerfile edit does not cover a devcontainer added later',
      facts: withFiles([dockerfile, devcontainer], ['T', 'T'], declared('D2', 'C')),
      approval: { blob: `${dockerfile}=D2` },
      expected: ask('adds', `${devcontainer}=C;${dockerfile}=D2`, [
        { path: devcontainer, change: 'adds' },
        { path: dockerfile, change: 'edits' },
      ]),
    },
    {
      name: 'an approval of the gate file alone does not cover the same gate file with a Dockerfile edit',
      facts: withFiles([gateFilePath, dockerfile], ['T', 'H'], declared('D2')),
      approval: { blob: 'H' },
      expected: ask('edits', `${gateFilePath}=H;${dockerfile}=D2`, [
        { path: gateFilePath, change: 'edits' },
        { path: dockerfile, change: 'edits' },
      ]),
    },
    {
      name: 'an approval of a combination covers the gate file alone only if that is what it was: a reverted Dockerfile is asked about again',
      facts: withFiles([gateFilePath], ['T', 'H'], declared('D')),
      approval: { blob: `${gateFilePath}=H;${dockerfile}=D2` },
      expected: { kind: 'ask', change: 'edits', blob: 'H' },
    },
    {
      name: 'the gate file listed among the declaration files (a Dockerfile named like it) counts once',
      facts: { ...withFiles([gateFilePath], ['T', 'H'], declared('D')), declarationFiles: [{ path: gateFilePath, targetBlob: 'T', headBlob: 'H' }] },
      expected: { kind: 'ask', change: 'edits', blob: 'H' },
    },
  ];
  for (const { name, facts: input, approval, expected } of table) {
    it(name, () => {
      assert.deepEqual(gateFileDecision(input, approval), expected);
      assert.equal(gateFileProblem(input, approval) !== undefined, expected.kind === 'ask');
    });
  }
});

describe('gate-file change: the approval key of a combination', () => {
  const table: { name: string; files: DeclarationFileFacts[]; expected: string }[] = [
    { name: 'one file', files: [{ path: dockerfile, targetBlob: 'D', headBlob: 'D2' }], expected: 'env/Dockerfile=D2' },
    {
      name: 'sorted by path whatever the order given; a deleted file is null',
      files: [
        { path: 'b', targetBlob: 'x', headBlob: null },
        { path: 'a', targetBlob: null, headBlob: 'y' },
      ],
      expected: 'a=y;b=null',
    },
    {
      name: 'paths holding ";", "=" or "%" cannot make another combination\'s key',
      files: [{ path: 'a=null;b', targetBlob: null, headBlob: 'o' }],
      expected: 'a%3Dnull%3Bb=o',
    },
  ];
  for (const { name, files, expected } of table) it(name, () => assert.equal(approvalKey(files), expected));
  it('the two combinations a naive key would confuse differ', () => {
    assert.notEqual(
      approvalKey([{ path: 'a=null;b', targetBlob: null, headBlob: 'o' }]),
      approvalKey([
        { path: 'a', targetBlob: 'x', headBlob: null },
        { path: 'b', targetBlob: null, headBlob: 'o' },
      ]),
    );
  });
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
  it('the question for the gate file alone reads as it always has', () => {
    assert.equal(
      gateFileQuestion('edits', 'b'.repeat(40), 'After the rebase'),
      'After the rebase, this landing edits .config/tarmac/land-gate.json (head bbbbbbbbbbbb), the file that decides the target\'s gate. Answer "approve", "approved", "yes" to approve exactly this version; an empty answer stops the landing, and any other answer is a refusal that also stops it.',
    );
    assert.equal(changedSubject(undefined), 'the gate file');
  });
  it('a question about declaration files names every changed file with its change', () => {
    const one = gateFileQuestion('edits', 'c'.repeat(40), 'After the rebase', [{ path: dockerfile, change: 'edits' }]);
    assert.match(one, /^After the rebase, this landing edits env\/Dockerfile \(head c{12}\), a file that declares the repository's environment\. /);
    assert.match(one, /"approve", "approved", "yes" to approve exactly this version;/);
    const files: ChangedFile[] = [
      { path: gateFilePath, change: 'edits' },
      { path: devcontainer, change: 'adds' },
      { path: dockerfile, change: 'deletes' },
    ];
    const many = gateFileQuestion('edits', 'c'.repeat(40), 'After fixup round 2', files);
    assert.match(
      many,
      /this landing edits \.config\/tarmac\/land-gate\.json, adds \.devcontainer\/devcontainer\.json and deletes env\/Dockerfile \(head c{12}\)/,
    );
    assert.match(many, /the files that decide the target's gate and declare its environment\. .*exactly these versions;/);
    assert.equal(changedSubject(files), "the gate file and the environment's declaration");
    assert.equal(changedSubject(files.slice(1)), "the environment's declaration");
  });
  it("verify's problem names the changed files", () => {
    assert.equal(gateFileProblem(facts([gateFilePath], 'T', 'H')), 'the head edits .config/tarmac/land-gate.json without an approval of that exact version');
    assert.equal(
      gateFileProblem(withFiles([dockerfile], ['T', 'T'], declared('D2'))),
      'the head edits env/Dockerfile without an approval of that exact version',
    );
    assert.equal(
      gateFileProblem(withFiles([dockerfile], ['T', 'T'], declared('D2', 'C'))),
      'the head adds .devcontainer/devcontainer.json and edits env/Dockerfile without an approval of those exact versions',
    );
  });
  it('a refusal names every changed file, and the file the outcome names', () => {
    assert.deepEqual(gateFileRefusal(''), {
      summary: `stopped: the change of ${gateFilePath} was not approved (empty answer); nothing was merged`,
      message: 'empty answer',
      file: gateFilePath,
    });
    const dockerfileOnly = gateFileRefusal('', [{ path: dockerfile, change: 'edits' }]);
    assert.equal(dockerfileOnly.summary, 'stopped: the change of env/Dockerfile was not approved (empty answer); nothing was merged');
    assert.equal(dockerfileOnly.file, dockerfile);
    const both = gateFileRefusal('sure', [
      { path: gateFilePath, change: 'edits' },
      { path: dockerfile, change: 'edits' },
    ]);
    assert.match(
      both.summary,
      /the answer "sure" is not an approval \(only approve, approved, yes approve\); the change of \.config\/tarmac\/land-gate\.json and env\/Dockerfile was not approved; nothing was merged$/,
    );
    assert.equal(both.file, gateFilePath);
  });
  it('a refusal quotes the answer and says it is not an approval; an empty one says so', () => {
    assert.match(gateFileRefusal('ok sure').summary, /the answer "ok sure" is not an approval/);
    assert.match(gateFileRefusal('ok sure').summary, /nothing was merged$/);
    assert.equal(gateFileRefusal('  ').message, 'empty answer');
    assert.ok(gateFileRefusal('x'.repeat(5000)).summary.length < 500, 'a long answer is shortened');
  });
});
