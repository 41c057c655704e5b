import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildWorkflowBundle, prebuiltBundlePath, prebuiltBundleState, workflowCodeOption, workflowSourceKey } from '../../worker/workflow-bundle';

/**
 * The prebuilt workflow bundle (worker/workflow-bundle.ts) on a root of the test's own: a tiny
 * workflow importing from core/ and policies/, bundled for real by the SDK's bundler.
 */
function makeRoot(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'tarmac-bundle-root-'));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  // The SDK's bundler resolves @temporalio/workflow from the root, as in the repository.
  symlinkSync(resolve(__dirname, '../../node_modules'), join(root, 'node_modules'));
  return root;
}

const tinyWorkflows = {
  'package.json': '{ "name": "tiny", "private": true }\n',
  'workflows/index.ts':
    "import { greeting } from '../core/greeting';\nimport { shout } from '../policies/shout';\nexport async function hello(): Promise<string> {\n  return shout(greeting);\n}\n",
  'core/greeting.ts': "export const greeting = 'hello';\n",
  'core/node/io.ts': "export const node = 'not in the sandbox';\n",
  'policies/shout.ts': 'export const shout = (text: string) => text.toUpperCase();\n',
};

function logged() {
  const lines: { level: 'info' | 'warn'; fields: object; message: string }[] = [];
  return {
    lines,
    log: {
      info: (fields: object, message: string) => lines.push({ level: 'info', fields, message }),
      warn: (fields: object, message: string) => lines.push({ level: 'warn', fields, message }),
    },
  };
}

describe('the workflow bundle key', () => {
  let root: string;
  before(() => {
    root = makeRoot(tinyWorkflows);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  const cases: { name: string; change: (root: string) => void; changesKey: boolean }[] = [
    {
      name: 'a workflow edited',
      change: (at) => writeFileSync(join(at, 'workflows/index.ts'), `${tinyWorkflows['workflows/index.ts']}// edited\n`),
      changesKey: true,
    },
    { name: 'a file added to core/', change: (at) => writeFileSync(join(at, 'core/new.ts'), 'export {};\n'), changesKey: true },
    {
      name: 'a policy edited',
      change: (at) => writeFileSync(join(at, 'policies/shout.ts'), 'export const shout = (text: string) => text;\n'),
      changesKey: true,
    },
    { name: 'the root package.json edited', change: (at) => writeFileSync(join(at, 'package.json'), '{ "name": "tiny2" }\n'), changesKey: true },
    {
      name: 'core/node/ edited (Node-only, never in the sandbox)',
      change: (at) => writeFileSync(join(at, 'core/node/io.ts'), "export const node = 'changed';\n"),
      changesKey: false,
    },
    { name: 'a file outside the keyed folders', change: (at) => writeFileSync(join(at, 'README.md'), '# tiny\n'), changesKey: false },
  ];
  for (const { name, change, changesKey } of cases) {
    it(`${name} → ${changesKey ? 'a new key' : 'the same key'}`, () => {
      const before = workflowSourceKey(root);
      change(root);
      assert.equal(workflowSourceKey(root) !== before, changesKey);
    });
  }
});

describe('the prebuilt bundle: built, current, stale, and what the worker loads', () => {
  let root: string;
  before(() => {
    root = makeRoot(tinyWorkflows);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('missing → the worker bundles from source and says there is none', () => {
    assert.equal(prebuiltBundleState(root).state, 'missing');
    const { lines, log } = logged();
    assert.deepEqual(workflowCodeOption(undefined, log, root), { workflowsPath: join(root, 'workflows', 'index.ts') });
    assert.deepEqual(
      lines.map((line) => [line.level, line.message]),
      [['info', 'no prebuilt workflow bundle; bundling the workflows from source (npm run build:workflows makes one)']],
    );
  });

  it('built → current, and the worker loads it; the inputs it read are the keyed sources', async () => {
    const built = await buildWorkflowBundle({ root, outFile: prebuiltBundlePath(root) });
    assert.deepEqual(built.inputs, ['core/greeting.ts', 'package.json', 'policies/shout.ts', 'workflows/index.ts']);
    assert.match(readFileSync(prebuiltBundlePath(root), 'utf8'), /toUpperCase/, 'the policy is in the bundle');
    const state = prebuiltBundleState(root);
    assert.equal(state.state, 'current');
    const { lines, log } = logged();
    assert.deepEqual(workflowCodeOption(undefined, log, root), { workflowBundle: { codePath: prebuiltBundlePath(root) } });
    assert.deepEqual(
      lines.map((line) => [line.level, line.message]),
      [['info', 'loading the prebuilt workflow bundle']],
    );
  });

  it('a source edited after the build → stale: never loaded; the worker bundles from source and warns why', () => {
    writeFileSync(join(root, 'policies/shout.ts'), 'export const shout = (text: string) => `${text}!`;\n');
    const state = prebuiltBundleState(root);
    assert.deepEqual(state.state === 'stale' && state.why, 'the workflow sources changed since it was built');
    const { lines, log } = logged();
    assert.deepEqual(workflowCodeOption(undefined, log, root), { workflowsPath: join(root, 'workflows', 'index.ts') });
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.level, 'warn');
    assert.match(lines[0]!.message, /stale, not loaded; bundling the workflows from source/);
    assert.deepEqual(lines[0]!.fields, { workflowBundle: prebuiltBundlePath(root), why: 'the workflow sources changed since it was built' });
  });

  it('rebuilt → current again; a bundle file that is not the one its meta describes → stale', async () => {
    await buildWorkflowBundle({ root, outFile: prebuiltBundlePath(root) });
    assert.equal(prebuiltBundleState(root).state, 'current');
    writeFileSync(prebuiltBundlePath(root), `${readFileSync(prebuiltBundlePath(root), 'utf8')}\n// changed by hand\n`);
    const state = prebuiltBundleState(root);
    assert.equal(state.state, 'stale');
    assert.match(state.state === 'stale' ? state.why : '', /is not the bundle its meta describes/);
  });

  it('TARMAC_WORKFLOW_BUNDLE is loaded as given, and logged', () => {
    const { lines, log } = logged();
    assert.deepEqual(workflowCodeOption('/srv/tarmac/release-bundle.js', log, root), { workflowBundle: { codePath: '/srv/tarmac/release-bundle.js' } });
    assert.deepEqual(
      lines.map((line) => [line.level, line.message, line.fields]),
      [['info', 'loading the workflow bundle TARMAC_WORKFLOW_BUNDLE names', { workflowBundle: '/srv/tarmac/release-bundle.js' }]],
    );
  });
});

describe('a bundle that reads a project file outside the keyed folders is refused', () => {
  let root: string;
  before(() => {
    root = makeRoot({
      ...tinyWorkflows,
      'workflows/index.ts': "import { helper } from '../lib/helper';\nexport async function hello(): Promise<string> {\n  return helper;\n}\n",
      'lib/helper.ts': "export const helper = 'h';\n",
    });
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('names the file and where the key is declared; writes nothing', async () => {
    await assert.rejects(
      buildWorkflowBundle({ root, outFile: prebuiltBundlePath(root) }),
      /the workflow bundle read lib\/helper\.ts, outside the folders its key covers \(workflows, core, policies\): add the folder to bundleSourceFolders in worker\/workflow-bundle\.ts/,
    );
    assert.equal(prebuiltBundleState(root).state, 'missing');
  });
});
