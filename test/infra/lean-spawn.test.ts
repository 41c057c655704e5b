import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { leanPipe, leanRun } from '../../activities/git/lean-spawn';
import { git } from '../helpers/git';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const until = async (check: () => boolean, ms: number) => {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
};
/** The helper's pid: the parent of a command it started. */
const helperPid = async () => Number((await leanRun({ command: 'sh', args: ['-c', 'echo $PPID'] })).stdout.toString().trim());

/**
 * The spawn helper (activities/git/spawn-helper.mts, activities/git/lean-spawn.ts) runs the host's git, tar
 * and chown for the worker: real commands, real processes. What the worker gets back must be what
 * a spawn of its own would have given, and the helper must neither outlive the worker nor keep it
 * alive, nor take a command's failure for its own.
 */
describe('the spawn helper: host commands started by a small process', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tarmac-lean-spawn-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("gives back a command's exit code, stdout and stderr as they were, bytes included", async () => {
    const ok = await leanRun({ command: 'sh', args: ['-c', 'printf "a\\000b\\377"; printf err >&2; exit 0'] });
    assert.equal(ok.code, 0);
    assert.deepEqual([...ok.stdout], [0x61, 0x00, 0x62, 0xff]);
    assert.equal(ok.stderr.toString(), 'err');
    const failed = await leanRun({ command: 'sh', args: ['-c', 'echo no >&2; exit 3'] });
    assert.equal(failed.code, 3);
    assert.equal(failed.stderr.toString(), 'no\n');
    const killed = await leanRun({ command: 'sh', args: ['-c', 'kill -TERM $$'] });
    assert.equal(killed.signal, 'SIGTERM');
  });

  it('runs in the directory and with the environment asked for; stdin gets the input and then its end', async () => {
    const seen = await leanRun({
      command: 'sh',
      args: ['-c', 'pwd; echo "$ONLY"; echo "${HOME:-unset}"; echo "${GONE-left out}"; cat'],
      cwd: dir,
      env: { ONLY: 'this', PATH: process.env.PATH ?? '', GONE: undefined },
      input: 'from stdin',
    });
    assert.equal(seen.stdout.toString(), `${dir}\nthis\nunset\nleft out\nfrom stdin`);
    // Without input, stdin is at its end at once (a command reading it does not wait).
    assert.equal((await leanRun({ command: 'cat', args: [] })).stdout.length, 0);
  });

  it("pipes one command's output into the next (git archive | tar -x), and reports each one's failure", async () => {
    const repo = join(dir, 'repo');
    git(dir, 'init', '-q', repo);
    writeFileSync(join(repo, 'file.txt'), 'content\n');
    git(repo, 'add', '.');
    git(repo, 'commit', '-q', '-m', 'one');
    const out = join(dir, 'out');
    spawnSync('mkdir', [out]);
    const [archive, tar] = await leanPipe(
      { command: 'git', args: ['-C', repo, 'archive', '--format=tar', 'HEAD'] },
      { command: 'tar', args: ['-x', '-C', out] },
    );
    assert.deepEqual([archive.code, tar.code], [0, 0]);
    assert.deepEqual(readdirSync(out), ['file.txt']);
    const [bad, reader] = await leanPipe({ command: 'git', args: ['-C', repo, 'archive', 'no-such-ref'] }, { command: 'wc', args: ['-c'] });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr.toString(), /no-such-ref/);
    assert.equal(reader.stdout.toString().trim(), '0');
  });

  it('a command past its time is stopped (SIGTERM) and says so; one past its output cap too, keeping what came before', async () => {
    const slow = await leanRun({ command: 'sleep', args: ['5'], timeoutMs: 200 });
    assert.deepEqual([slow.timedOut, slow.signal, slow.overflowed], [true, 'SIGTERM', false]);
    const flood = await leanRun({ command: 'sh', args: ['-c', 'yes line | head -c 2000000; sleep 5'], maxStdoutBytes: 100_000 });
    assert.equal(flood.overflowed, true);
    assert.ok(flood.stdout.length <= 100_000, `${flood.stdout.length} bytes kept`);
    assert.equal(flood.signal, 'SIGTERM');
    const quick = await leanRun({ command: 'echo', args: ['in time'], timeoutMs: 10_000, maxStdoutBytes: 1000 });
    assert.deepEqual([quick.code, quick.timedOut, quick.overflowed, quick.stdout.toString()], [0, false, false, 'in time\n']);
  });

  it('a command that does not exist is an error naming it, as a spawn of its own would be', async () => {
    await assert.rejects(
      leanRun({ command: 'no-such-command-here', args: [] }),
      (error: NodeJS.ErrnoException) => error.code === 'ENOENT' && /no-such-command-here/.test(error.message),
    );
    // The helper is still there for the next one.
    assert.equal((await leanRun({ command: 'true', args: [] })).code, 0);
  });

  it('a helper that dies mid-command fails that command (its outcome unknown) and the next call gets a new helper', async () => {
    const first = await helperPid();
    const slow = leanRun({ command: 'sleep', args: ['5'] });
    process.kill(first, 'SIGKILL');
    await assert.rejects(slow, /spawn helper exited.*outcome is unknown/);
    const second = await helperPid();
    assert.notEqual(second, first);
    assert.equal((await leanRun({ command: 'echo', args: ['again'] })).stdout.toString(), 'again\n');
  });

  it('TARMAC_SPAWN_HELPER=off: the same results, spawned by this process itself', async () => {
    process.env.TARMAC_SPAWN_HELPER = 'off';
    try {
      assert.equal((await leanRun({ command: 'sh', args: ['-c', 'echo $PPID'] })).stdout.toString().trim(), String(process.pid));
      const [archive, count] = await leanPipe({ command: 'printf', args: ['abc'] }, { command: 'wc', args: ['-c'] });
      assert.deepEqual([archive.code, count.stdout.toString().trim()], [0, '3']);
      assert.equal((await leanRun({ command: 'cat', args: [], input: 'x' })).stdout.toString(), 'x');
      assert.equal((await leanRun({ command: 'sleep', args: ['5'], timeoutMs: 100 })).timedOut, true);
      await assert.rejects(leanRun({ command: 'no-such-command-here', args: [] }), /ENOENT/);
    } finally {
      delete process.env.TARMAC_SPAWN_HELPER;
    }
    assert.notEqual(await helperPid(), process.pid, 'and back on the helper');
  });

  it('an idle helper does not keep its process alive, and it goes when that process goes', () => {
    const script = `const { leanRun } = require(${JSON.stringify(join(__dirname, '../../activities/git/lean-spawn.ts'))}); leanRun({ command: 'sh', args: ['-c', 'echo $PPID'] }).then((r) => process.stdout.write(r.stdout.toString()));`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(child.status, 0, `the process ended by itself (${child.signal ?? child.status}): ${child.stderr}`);
    const helper = Number(child.stdout.trim());
    assert.ok(helper > 0, child.stdout);
    return until(() => !alive(helper), 5_000).then((gone) => assert.ok(gone, `helper ${helper} exited with its process`));
  });
});
