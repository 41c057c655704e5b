import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gateFileFactsIn } from '../../activities/git/gate-file-facts';
import { gateFilePath } from '../../core/gate-file';
import { gateFileDecision } from '../../policies/gate-file-change';

/**
 * The facts of the files that decide a target's gate and environment, read from a real
 * repository in a temp dir (git only): the gate file's objects as ls-tree names them, and the
 * declaration files — the devcontainer always, the Dockerfile the target's declaration names,
 * and the one the head's would name.
 */
describe("gate-file facts: the gate file and the environment's declaration files on two commits", () => {
  let dir: string;
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=T', '-c', 'user.email=t@t.invalid', ...args], { encoding: 'utf8' }).trim();
  const gateWith = (environment?: Record<string, unknown>) =>
    `${JSON.stringify({ version: 1, suites: [{ id: 'test', run: ['true'] }], ...(environment ? { environment } : {}) })}\n`;
  const envGate = gateWith({ dockerfile: 'env/Dockerfile', setup: [], inputs: ['env/Dockerfile'] });
  /** A commit on `from` (a new branch `name`; none: the first commit) writing `files` (null: removed); returns its SHA. */
  const commitOn = (from: string | undefined, name: string, files: Record<string, string | null>) => {
    if (from !== undefined) git('checkout', '-q', '-B', name, from);
    for (const [file, content] of Object.entries(files)) {
      if (content === null) git('rm', '-q', file);
      else {
        mkdirSync(dirname(join(dir, file)), { recursive: true });
        writeFileSync(join(dir, file), content);
        git('add', file);
      }
    }
    git('commit', '-q', '--allow-empty', '-m', name);
    return git('rev-parse', 'HEAD');
  };
  const blob = (sha: string, path: string) => git('rev-parse', `${sha}:${path}`);
  let target: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tarmac-gate-facts-'));
    git('init', '-q', '-b', 'main');
    target = commitOn(undefined, 'main', { [gateFilePath]: envGate, 'env/Dockerfile': 'FROM tarmac/runner:local\n', 'src.txt': 'a\n' });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a head that changes neither: the declaration files are listed, unchanged', async () => {
    const head = commitOn(target, 'plain', { 'src.txt': 'b\n' });
    const facts = await gateFileFactsIn(dir, target, head);
    const gate = blob(target, gateFilePath);
    const dockerfile = blob(target, 'env/Dockerfile');
    assert.deepEqual(facts, {
      changedPaths: ['src.txt'],
      targetBlob: gate,
      headBlob: gate,
      declarationFiles: [
        { path: '.devcontainer/devcontainer.json', targetBlob: null, headBlob: null },
        { path: 'env/Dockerfile', targetBlob: dockerfile, headBlob: dockerfile },
      ],
    });
    assert.deepEqual(gateFileDecision(facts), { kind: 'unchanged' });
  });

  it("a head that edits only the Dockerfile the target's gate file names is asked about", async () => {
    const head = commitOn(target, 'edit-dockerfile', { 'env/Dockerfile': 'FROM tarmac/runner:local\nRUN echo changed\n' });
    const facts = await gateFileFactsIn(dir, target, head);
    assert.deepEqual(facts.declarationFiles?.[1], {
      path: 'env/Dockerfile',
      targetBlob: blob(target, 'env/Dockerfile'),
      headBlob: blob(head, 'env/Dockerfile'),
    });
    assert.deepEqual(gateFileDecision(facts), {
      kind: 'ask',
      change: 'edits',
      blob: `env/Dockerfile=${blob(head, 'env/Dockerfile')}`,
      files: [{ path: 'env/Dockerfile', change: 'edits' }],
    });
  });

  it('a head that only adds a devcontainer (the gate file declaring none) is asked about', async () => {
    const plainTarget = commitOn(target, 'no-environment', { [gateFilePath]: gateWith(), 'env/Dockerfile': null });
    const head = commitOn(plainTarget, 'add-devcontainer', { '.devcontainer/devcontainer.json': '{ "image": "tarmac/runner:local" }\n' });
    const facts = await gateFileFactsIn(dir, plainTarget, head);
    assert.deepEqual(facts.declarationFiles, [
      { path: '.devcontainer/devcontainer.json', targetBlob: null, headBlob: blob(head, '.devcontainer/devcontainer.json') },
    ]);
    assert.equal(gateFileDecision(facts).kind, 'ask');
  });

  it("a head whose gate file names another Dockerfile: both Dockerfiles are listed (the target's and the head's)", async () => {
    const head = commitOn(target, 'other-dockerfile', {
      [gateFilePath]: gateWith({ dockerfile: 'other/Dockerfile', setup: [], inputs: ['other/Dockerfile'] }),
      'other/Dockerfile': 'FROM tarmac/runner:local\n',
    });
    const facts = await gateFileFactsIn(dir, target, head);
    assert.deepEqual(
      facts.declarationFiles?.map((file) => file.path),
      ['.devcontainer/devcontainer.json', 'env/Dockerfile', 'other/Dockerfile'],
    );
    assert.deepEqual(facts.declarationFiles?.[2], { path: 'other/Dockerfile', targetBlob: null, headBlob: blob(head, 'other/Dockerfile') });
    const decision = gateFileDecision(facts);
    assert.ok(decision.kind === 'ask' && decision.files);
    assert.deepEqual(decision.files, [
      { path: gateFilePath, change: 'edits' },
      { path: 'other/Dockerfile', change: 'adds' },
    ]);
  });

  it("a devcontainer's build.dockerfile is one of the declaration files (relative to .devcontainer/)", async () => {
    const devTarget = commitOn(target, 'devcontainer-target', {
      [gateFilePath]: gateWith(),
      '.devcontainer/devcontainer.json': '{ "build": { "dockerfile": "Dockerfile" } }\n',
      '.devcontainer/Dockerfile': 'FROM tarmac/runner:local\n',
    });
    const head = commitOn(devTarget, 'devcontainer-head', { '.devcontainer/Dockerfile': 'FROM tarmac/runner:local\nRUN true\n' });
    const facts = await gateFileFactsIn(dir, devTarget, head);
    assert.deepEqual(facts.declarationFiles?.[1], {
      path: '.devcontainer/Dockerfile',
      targetBlob: blob(devTarget, '.devcontainer/Dockerfile'),
      headBlob: blob(head, '.devcontainer/Dockerfile'),
    });
    assert.equal(gateFileDecision(facts).kind, 'ask');
  });

  it("a submodule put at the gate file's path is named by its commit, as the gate file's facts always were (not taken for a deletion)", async () => {
    git('checkout', '-q', '-B', 'submodule', target);
    git('rm', '-q', '--cached', gateFilePath);
    const gitlink = '1234567890123456789012345678901234567890';
    git('update-index', '--add', '--cacheinfo', `160000,${gitlink},${gateFilePath}`);
    git('commit', '-q', '-m', 'submodule at the gate path');
    const head = git('rev-parse', 'HEAD');
    git('reset', '-q', '--hard', target);
    const facts = await gateFileFactsIn(dir, target, head);
    assert.equal(facts.headBlob, gitlink);
    assert.deepEqual(gateFileDecision(facts), { kind: 'ask', change: 'edits', blob: gitlink });
  });
});
