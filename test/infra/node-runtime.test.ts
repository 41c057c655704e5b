import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startStack, type Stack } from '../helpers/stack';

const root = resolve(__dirname, '../..');
const engines = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
/** The oldest Node major the project runs on, from package.json `engines` (`>=24`). */
const minimumMajor = Number(/^>=\s*(\d+)(\.\d+){0,2}$/.exec(engines)?.[1]);
const major = (version: string) => Number(/^v?(\d+)\./.exec(version.trim())?.[1]);
const node = realpathSync(process.execPath);

/** What scripts/node-env.sh says, sourced by bash with this PATH: its cache directory, and the node it then finds. */
function nodeEnv(path: string): { dir: string; node: string; version: string } {
  const result = spawnSync('bash', ['-c', '. scripts/node-env.sh && printf "%s\\n" "$tarmac_node_dir" "$(command -v node)" "$(node --version)"'], {
    cwd: root,
    env: { ...process.env, PATH: path },
    encoding: 'utf8',
  });
  assert.equal(result.status, 0, result.stderr);
  const [dir, found, version] = result.stdout.trim().split('\n');
  return { dir: dir!, node: realpathSync(found!), version: version! };
}

/**
 * The PATH a process started by an older npm has: this one without the directory of the node the tests
 * run on when that node is the one setup put in the cache (else the node on PATH is new enough itself).
 */
function pathWithoutCachedNode(): string {
  const { dir } = nodeEnv(process.env.PATH ?? '');
  const cached = join(dir, 'bin/node');
  if (!existsSync(cached) || realpathSync(cached) !== node) return process.env.PATH ?? '';
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter((entry) => resolve(entry) !== resolve(dir, 'bin'))
    .join(delimiter);
}

describe(`Node ${engines} (package.json engines): the runtime the project runs and is tested on`, () => {
  it('package.json engines names a minimum major version', () => {
    assert.ok(Number.isInteger(minimumMajor) && minimumMajor >= 24, `engines.node is ">=<major>" with a major of at least 24, not ${JSON.stringify(engines)}`);
  });

  it('the tests run on a node engines allows', () => {
    assert.ok(major(process.version) >= minimumMajor, `the tests run on node ${process.version} (${process.execPath}); engines says ${engines}`);
  });

  it('scripts/node-env.sh finds that node from a PATH whose node is older (npm test and npm run started by the system npm)', () => {
    const path = pathWithoutCachedNode();
    const found = nodeEnv(path);
    assert.equal(found.node, node, `node-env.sh picks the node the tests run on (PATH: ${path})`);
    assert.ok(major(found.version) >= minimumMajor, found.version);
    // The npm scripts run their command through it (package.json): the command's node is this one.
    const run = spawnSync('bash', ['scripts/node-env.sh', 'node', '-p', 'process.execPath'], {
      cwd: root,
      env: { ...process.env, PATH: path },
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(realpathSync(run.stdout.trim()), node);
    assert.equal(run.stderr, '', 'no warning when the node is new enough');
  });

  it('bin/tarmac.sh runs the CLI on that node from the same PATH', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tarmac-node-probe-'));
    try {
      // Every node the CLI starts records itself (NODE_OPTIONS reaches the node bin/tarmac.sh execs).
      const probe = join(dir, 'probe.cjs');
      const record = join(dir, 'nodes.txt');
      writeFileSync(probe, `require('node:fs').appendFileSync(${JSON.stringify(record)}, process.version + ' ' + process.execPath + '\\n');\n`);
      const result = spawnSync(join(root, 'bin/tarmac.sh'), ['--version'], {
        cwd: dir,
        env: { ...process.env, PATH: pathWithoutCachedNode(), NODE_OPTIONS: `--require=${probe}` },
        encoding: 'utf8',
      });
      assert.equal(result.status, 0, result.stderr);
      assert.match(result.stdout, /^tarmac \d+\.\d+\.\d+/);
      const nodes = readFileSync(record, 'utf8').trim().split('\n');
      assert.ok(nodes.length >= 1);
      for (const line of nodes) {
        const [version, execPath] = line.split(' ');
        assert.ok(major(version!) >= minimumMajor, `the CLI ran on node ${version}`);
        assert.equal(realpathSync(execPath!), node);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('npm ci prints no engine warning (a dry run of the lockfile, offline, with the npm on that PATH)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tarmac-npm-ci-'));
    try {
      for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(root, file), join(dir, file));
      const result = spawnSync('bash', [join(root, 'scripts/node-env.sh'), 'npm', 'ci', '--dry-run', '--offline', '--no-audit', '--no-fund'], {
        cwd: dir,
        env: { ...process.env, PATH: pathWithoutCachedNode() },
        encoding: 'utf8',
      });
      assert.equal(result.status, 0, result.stderr);
      const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
      const packages = Number(/added (\d+) packages/.exec(result.stdout)?.[1]);
      // The dry run resolved the whole tree (so a warning had every chance to show).
      assert.ok(packages > 100 && packages < Object.keys(lock.packages).length, `npm ci --dry-run added ${packages} packages:\n${result.stdout.slice(-2000)}`);
      assert.doesNotMatch(`${result.stdout}\n${result.stderr}`, /EBADENGINE|Unsupported engine/, result.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the image that carries Tarmac says a Node major engines allows: images/tarmac (NODE_IMAGE)', () => {
    for (const image of ['images/tarmac/Dockerfile']) {
      const from = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(readFileSync(join(root, image), 'utf8'));
      assert.ok(from, `${image} has ARG NODE_IMAGE=node:<major>-…`);
      assert.ok(Number(from[1]) >= minimumMajor, `${image}: node:${from[1]} (engines ${engines})`);
    }
  });

  describe('the worker a stack starts', () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack();
    });
    after(async () => {
      await stack?.stop();
    });

    it('runs on the same node binary as the tests (/proc/<pid>/exe)', () => {
      const pid = stack.worker().pid;
      assert.ok(pid, 'the worker has a pid');
      assert.equal(realpathSync(readlinkSync(`/proc/${pid}/exe`)), node);
    });
  });
});
