import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ConfinedPathError,
  confinedComponents,
  listDirectoryNoFollow,
  lstatNoFollow,
  readFileNoFollow,
  writeFileNoFollow,
  type RefusalCode,
} from '../../activities/stores/confined-fs';

const refusedWith = (code: RefusalCode) => (error: unknown) => error instanceof ConfinedPathError && error.code === code;

describe('confinedComponents: paths are normalised as text and refused before any file is opened', () => {
  const accepted: { name: string; input: string; expected: string[] }[] = [
    { name: 'a plain relative path', input: 'src/app.js', expected: ['src', 'app.js'] },
    { name: 'dots and doubled slashes', input: './src//app.js/', expected: ['src', 'app.js'] },
    { name: '.. inside the root', input: 'src/../lib/x', expected: ['lib', 'x'] },
    { name: 'the root, empty', input: '', expected: [] },
    { name: 'the root, dot', input: '.', expected: [] },
    { name: 'a name that only starts like .git', input: '.github/workflows/ci.yml', expected: ['.github', 'workflows', 'ci.yml'] },
    { name: 'a name that ends like .git', input: 'x.git', expected: ['x.git'] },
  ];
  for (const { name, input, expected } of accepted) it(`accepts ${name}`, () => assert.deepEqual(confinedComponents(input), expected));

  const refused: { name: string; input: string; code: RefusalCode }[] = [
    { name: 'a climb out of the root', input: '../etc/passwd', code: 'outside' },
    { name: 'a climb out after a detour', input: 'a/../../etc/passwd', code: 'outside' },
    { name: 'an absolute path', input: '/etc/passwd', code: 'outside' },
    { name: '.git', input: '.git', code: 'git' },
    { name: '.git/config', input: '.git/config', code: 'git' },
    { name: './.git', input: './.git/config', code: 'git' },
    { name: 'a/../.git', input: 'a/../.git/hooks/pre-commit', code: 'git' },
    { name: '.git with a trailing slash', input: '.git/', code: 'git' },
    { name: '.GIT in capitals', input: '.GIT/config', code: 'git' },
    { name: '.Git in a subdirectory (a submodule)', input: 'vendor/lib/.Git/config', code: 'git' },
    { name: 'a NUL byte', input: 'a\0b', code: 'invalid' },
  ];
  for (const { name, input, code } of refused) it(`refuses ${name}`, () => assert.throws(() => confinedComponents(input), refusedWith(code)));
});

describe('confined file access on real directories', () => {
  let base: string;
  let root: string;
  let outside: string;
  const secret = 'host secret 7f3a\n';
  before(() => {
    base = mkdtempSync(join(tmpdir(), 'tarmac-confined-'));
    root = join(base, 'workspace');
    outside = join(base, 'outside');
    mkdirSync(join(root, 'src'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(outside, 'secret'), secret);
    writeFileSync(join(root, 'src', 'app.js'), 'module.exports = 1;\n');
    writeFileSync(join(root, '.git'), 'gitdir: /somewhere\n');
    mkdirSync(join(root, '.GIT'));
    symlinkSync('/', join(root, 'r'));
    symlinkSync(outside, join(root, 'out'));
    symlinkSync(join(outside, 'secret'), join(root, 'x'));
    symlinkSync('src', join(root, 'inner'));
    symlinkSync('src/app.js', join(root, 'app-link.js'));
    symlinkSync('/nonexistent/target', join(root, 'dangling'));
    execFileSync('mkfifo', [join(root, 'fifo')]);
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  it('reads a regular file', async () => {
    assert.equal((await readFileNoFollow(root, 'src/app.js', 1024)).toString(), 'module.exports = 1;\n');
  });

  for (const [name, path] of [
    ['a link to the host root, used as a directory', 'r/etc/passwd'],
    ['a link to a host directory', 'out/secret'],
    ['a link to a host file', 'x'],
    ['a link to a directory inside the workspace', 'inner/app.js'],
    ['a link to a file inside the workspace', 'app-link.js'],
    ['a dangling link', 'dangling'],
  ] as const) {
    it(`refuses to read through ${name}`, async () => {
      await assert.rejects(readFileNoFollow(root, path, 1024 * 1024), refusedWith('link'));
    });
  }

  it('refuses a FIFO without hanging, a directory, a file over the cap, and a .git file', async () => {
    await assert.rejects(readFileNoFollow(root, 'fifo', 1024), refusedWith('not-file'));
    await assert.rejects(readFileNoFollow(root, 'src', 1024), refusedWith('not-file'));
    await assert.rejects(readFileNoFollow(root, 'src/app.js', 5), refusedWith('too-large'));
    await assert.rejects(readFileNoFollow(root, '.git', 1024), refusedWith('git'));
    await assert.rejects(readFileNoFollow(root, 'missing.txt', 1024), refusedWith('missing'));
  });

  it('writes and creates files with their directories, as the given owner', async () => {
    const owner = process.getuid?.() === 0 ? { uid: 1234, gid: 1234 } : undefined;
    assert.deepEqual(await writeFileNoFollow(root, 'new/deep/file.txt', 'made\n', owner ? { owner } : {}), { created: true });
    assert.equal(readFileSync(join(root, 'new/deep/file.txt'), 'utf8'), 'made\n');
    if (owner) {
      assert.equal(statSync(join(root, 'new/deep/file.txt')).uid, 1234, 'the file belongs to the owner');
      assert.equal(statSync(join(root, 'new/deep')).uid, 1234, 'and so do the directories made for it');
    }
    assert.deepEqual(await writeFileNoFollow(root, 'new/deep/file.txt', 'shorter\n'), { created: false });
    assert.equal(readFileSync(join(root, 'new/deep/file.txt'), 'utf8'), 'shorter\n', 'an existing file is truncated and rewritten');
  });

  it('never writes through a link, and makes no directory through one', async () => {
    await assert.rejects(writeFileNoFollow(root, 'x', 'overwritten'), refusedWith('link'));
    await assert.rejects(writeFileNoFollow(root, 'out/secret', 'overwritten'), refusedWith('link'));
    await assert.rejects(writeFileNoFollow(root, 'out/made/file', 'new'), refusedWith('link'));
    await assert.rejects(writeFileNoFollow(root, 'dangling', 'created through a dangling link'), refusedWith('link'));
    await assert.rejects(writeFileNoFollow(root, '.GIT/config', '[core]'), refusedWith('git'));
    assert.equal(readFileSync(join(outside, 'secret'), 'utf8'), secret, 'the host file is unchanged');
    assert.equal(existsSync(join(outside, 'made')), false, 'no directory was made outside');
    assert.equal(existsSync('/nonexistent'), false, 'the dangling link target was not created');
  });

  it('refuses to write a file with a second name (a hard link)', async () => {
    writeFileSync(join(root, 'linked-a'), 'one\n');
    linkSync(join(root, 'linked-a'), join(root, 'linked-b'));
    await assert.rejects(writeFileNoFollow(root, 'linked-b', 'two\n'), refusedWith('not-file'));
    assert.equal(readFileSync(join(root, 'linked-a'), 'utf8'), 'one\n');
  });

  it('lists a directory without following links and without .git in any case', async () => {
    const { entries, truncated } = await listDirectoryNoFollow(root, '.', 1000);
    const byName = Object.fromEntries(entries.map((entry) => [entry.name, entry.kind]));
    assert.equal(byName.r, 'link');
    assert.equal(byName.src, 'directory');
    assert.equal(byName.fifo, 'other');
    assert.equal('.git' in byName || '.GIT' in byName, false, '.git and .GIT are not listed');
    assert.equal(truncated, false);
    await assert.rejects(listDirectoryNoFollow(root, 'r', 1000), refusedWith('link'));
    await assert.rejects(listDirectoryNoFollow(root, 'r/etc', 1000), refusedWith('link'));
    const capped = await listDirectoryNoFollow(root, '.', 2);
    assert.equal(capped.entries.length, 2);
    assert.equal(capped.truncated, true);
  });

  it('tells what is at a path without following it', async () => {
    assert.equal(await lstatNoFollow(root, 'x'), 'link');
    assert.equal(await lstatNoFollow(root, 'src/app.js'), 'file');
    assert.equal(await lstatNoFollow(root, 'src'), 'directory');
    assert.equal(await lstatNoFollow(root, 'nothing/here'), undefined);
    await assert.rejects(lstatNoFollow(root, 'r/etc/passwd'), refusedWith('link'));
  });

  it('a directory swapped for a link while it is being read never leads outside', async () => {
    mkdirSync(join(root, 'swap'));
    writeFileSync(join(root, 'swap', 'secret'), 'inside\n');
    // Another process flips `swap` between the real directory and a link to the host directory.
    const flipper = spawn('sh', ['-c', `cd '${root}' && while :; do mv swap swap.real && ln -s '${outside}' swap && rm swap && mv swap.real swap; done`], {
      stdio: 'ignore',
    });
    try {
      const seen = new Set<string>();
      for (let round = 0; round < 3000; round += 1) {
        try {
          seen.add((await readFileNoFollow(root, 'swap/secret', 1024)).toString());
        } catch (error) {
          if (!(error instanceof ConfinedPathError)) throw error;
          seen.add(`refused:${error.code}`);
        }
      }
      assert.equal(seen.has(secret), false, `the host file was never read (saw ${[...seen].join(', ')})`);
      assert.ok(seen.has('inside\n'), 'the real file was read when it was there');
    } finally {
      flipper.kill('SIGKILL');
    }
  });
});
