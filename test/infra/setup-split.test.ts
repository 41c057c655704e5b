import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';

const root = resolve(__dirname, '../..');

/**
 * `npm run up` installs what running needs; `npm test` also what only the tests need. The real
 * scripts/setup.sh runs, traced (`bash -x`: every command it executes), in a copy of the project
 * whose node_modules starts empty, so its npm step really installs. The steps that build or fetch
 * for minutes (agent CLIs, images, the workflow bundle, the dashboard) are replaced in the copy by
 * scripts that record how they were called; everything else is the machine's own (Docker, the
 * compose tool, chromium, the schemathesis venv in the cache), which setup only looks at here.
 */
describe('scripts/setup.sh: running needs, then what only the tests need', () => {
  const project = mkdtempSync(join(tmpdir(), 'tarmac-setup-'));
  const record = join(project, 'calls.log');
  before(() => {
    cpSync(join(root, 'scripts'), join(project, 'scripts'), { recursive: true });
    for (const file of ['package.json', 'package-lock.json']) cpSync(join(root, file), join(project, file));
    const recorder = (name: string) => `require('node:fs').appendFileSync(process.env.TARMAC_SETUP_RECORD, ${JSON.stringify(`${name}\n`)});\n`;
    writeFileSync(join(project, 'scripts/fetch-agent-clis.sh'), '#!/usr/bin/env bash\necho "fetch-agent-clis $*" >> "$TARMAC_SETUP_RECORD"\n');
    writeFileSync(join(project, 'scripts/build-images.sh'), '#!/usr/bin/env bash\necho "build-images $*" >> "$TARMAC_SETUP_RECORD"\n');
    writeFileSync(join(project, 'scripts/fetch-test-server.sh'), '#!/usr/bin/env bash\necho "fetch-test-server $*" >> "$TARMAC_SETUP_RECORD"\n');
    writeFileSync(join(project, 'scripts/build-workflows.ts'), recorder('build-workflows'));
    writeFileSync(join(project, 'scripts/build-dashboard.ts'), recorder('build-dashboard'));
    for (const script of ['fetch-agent-clis.sh', 'build-images.sh', 'fetch-test-server.sh']) chmodSync(join(project, 'scripts', script), 0o755);
  });
  after(() => rmSync(project, { recursive: true, force: true }));

  /** Runs setup with these arguments; its trace, and the calls of the recorded steps since the last run. */
  function setup(args: string[]): { trace: string; calls: string[] } {
    rmSync(record, { force: true });
    const env: NodeJS.ProcessEnv = { ...process.env, TARMAC_SETUP_RECORD: record, TARMAC_TEMPORAL_BIN: '/bin/true' };
    delete env.TARMAC_SKIP_IMAGES;
    const result = spawnSync('bash', ['-x', join(project, 'scripts/setup.sh'), ...args], { cwd: project, env, encoding: 'utf8', timeout: 600_000 });
    assert.equal(result.status, 0, `setup ${args.join(' ')} failed:\n${result.stderr.slice(-4000)}`);
    return {
      trace: result.stderr,
      calls: existsSync(record)
        ? readFileSync(record, 'utf8')
            .trim()
            .split('\n')
            .map((call) => call.trim())
        : [],
    };
  }
  /** The commands the trace shows executed (lines starting with `+`), for matching. */
  const executed = (trace: string) =>
    trace
      .split('\n')
      .filter((line) => /^\++ /.test(line))
      .join('\n');
  const installed = (name: string) => existsSync(join(project, 'node_modules', name, 'package.json'));

  it('package.json: `npm run up` runs setup for running; `npm test` runs it with --tests', () => {
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    assert.match(scripts.up!, /^bash scripts\/setup\.sh && /);
    assert.match(scripts.test!, /^bash scripts\/setup\.sh (--\S+ )*--tests\b.* && bash scripts\/test\.sh/);
  });

  it('without --tests: the dependencies without the devDependencies; none of chromium, schemathesis, the compose tool or the test server is even looked at', () => {
    const { trace, calls } = setup([]);
    const commands = executed(trace);
    assert.match(commands, /^\++ npm ci --omit=dev /m);
    for (const runtime of ['fastify', 'tsx', '@temporalio/worker', 'esbuild']) assert.ok(installed(runtime), `${runtime} is installed (running needs it)`);
    for (const devOnly of ['playwright-core', 'typescript', 'eslint', '@temporalio/testing'])
      assert.ok(!installed(devOnly), `${devOnly} is not installed (only the tests need it)`);
    assert.ok(existsSync(join(project, 'node_modules/.tarmac-omit-dev')), 'the install is marked run-only');
    assert.doesNotMatch(
      commands,
      /\/usr\/bin\/chromium|schemathesis --version|docker-compose|pip |apt-get/,
      'no test-only tool is checked, let alone installed',
    );
    assert.deepEqual(
      calls,
      ['fetch-agent-clis', 'build-images', 'build-workflows', 'build-dashboard'],
      'every image (none is for the tests only); no time-skipping test server',
    );
  });

  it('with --tests: completes the install with the devDependencies, checks (and would install) chromium, schemathesis and the compose tool, builds every image, fetches the test server', () => {
    const { trace, calls } = setup(['--tests']);
    const commands = executed(trace);
    assert.match(commands, /^\++ npm ci --no-audit --no-fund$/m, 'a full install, since the last one was run-only');
    for (const name of ['playwright-core', 'typescript', 'eslint', 'fastify']) assert.ok(installed(name), `${name} is installed`);
    assert.ok(!existsSync(join(project, 'node_modules/.tarmac-omit-dev')));
    assert.match(commands, /\/usr\/bin\/chromium/, 'chromium is checked');
    assert.match(commands, /schemathesis --version/, 'schemathesis is checked');
    assert.match(commands, /command -v docker-compose/, 'the compose tool is checked');
    assert.deepEqual(
      calls,
      ['fetch-agent-clis', 'build-images', 'build-workflows', 'build-dashboard', 'fetch-test-server'],
      'build-images with no argument: every image; the time-skipping test server',
    );
  });

  it('without --tests after a full install: nothing is removed (no npm ci)', () => {
    const { trace } = setup([]);
    assert.doesNotMatch(executed(trace), /npm ci/);
    assert.ok(installed('typescript'), 'the development tools stay');
  });
});
