import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fromGateFile } from '../../core/environment';
import { defaultRunnerImage, gateFilePath, parseGateFile } from '../../core/gate-file';

const root = resolve(__dirname, '../..');

/**
 * The tool gates itself: Tarmac's own `.config/tarmac/land-gate.json` is a valid gate file whose
 * suites are the project's own checks (package.json scripts: typecheck, lint, the unit tier), run in
 * the environment it declares — the runner, the Node package.json wants (fetched by
 * scripts/fetch-node.sh at the version scripts/node-env.sh pins) and `npm ci` — which the worker
 * builds, keyed by the files the setup reads. No image is built by hand for it.
 * test/e2e/self-gate.test.ts runs it for real.
 */
describe("Tarmac's own gate file", () => {
  const parsed = parseGateFile(readFileSync(join(root, gateFilePath), 'utf8'));
  const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const declaration = parsed.ok ? fromGateFile(parsed.gate) : undefined;

  it('is valid under the gate file schema', () => {
    assert.ok(parsed.ok, parsed.ok ? '' : `${parsed.field} ${parsed.message}`);
  });

  it('runs typecheck, lint and the unit tier, each a real package.json script run with npm', () => {
    assert.ok(parsed.ok);
    const run = parsed.gate.suites.map((suite) => suite.run);
    for (const argv of run) {
      assert.deepEqual(argv.slice(0, 2), ['npm', 'run'], `${argv.join(' ')}: npm run <script>`);
      assert.equal(argv.length, 3, `${argv.join(' ')}: one script, no arguments`);
      assert.ok(Object.hasOwn(scripts, argv[2]!), `package.json has no script "${argv[2]}"`);
    }
    assert.deepEqual(run.map((argv) => argv[2]).sort(), ['lint', 'test:unit', 'typecheck']);
    assert.match(scripts['test:unit']!, /test\/run-unit\.ts/, 'test:unit is the unit tier');
  });

  it('declares its environment on the runner: the pinned Node fetched into the workspace, then npm ci with it', () => {
    assert.ok(parsed.ok && declaration);
    assert.equal(parsed.gate.image, undefined, 'no gate image: the suites run in the environment');
    assert.equal(declaration.image, defaultRunnerImage);
    const [fetch, install, ...rest] = declaration.setup;
    assert.match(
      fetch!,
      /^TARMAC_CACHE_DIR=(\S+) bash scripts\/fetch-node\.sh && mv \1\/node-v\* \.tarmac-node$/,
      'the Node of scripts/fetch-node.sh, moved to .tarmac-node/',
    );
    assert.equal(install, 'npm ci');
    assert.deepEqual(rest, []);
    // With the registry given by the worker (TARMAC_SETUP_ENV), or npm's default: never named here.
    assert.doesNotMatch(declaration.setup.join('\n'), /--registry|https?:/);
    assert.equal(declaration.egress, undefined, "the operator's allow-list as it is");
  });

  it('is keyed by every file the setup reads: the package files and the scripts that fetch Node', () => {
    assert.ok(declaration);
    assert.deepEqual([...declaration.inputs].sort(), ['package-lock.json', 'package.json', 'scripts/fetch-node.sh', 'scripts/node-env.sh']);
    // fetch-node.sh reads the pinned version from node-env.sh, and no other file of the tree.
    const sourced = readFileSync(join(root, 'scripts/fetch-node.sh'), 'utf8').match(/^\s*(\.|source) .*$/gm);
    assert.deepEqual(sourced, ['. "$here/node-env.sh"']);
  });

  it("puts that Node first on PATH (ahead of the runner's older Debian node), with npm's update check, funding and audit off", () => {
    assert.ok(declaration);
    const path = declaration.env.PATH!.split(':');
    assert.equal(path[0], '/workspace/.tarmac-node/bin', 'the setup makes it there; gates link it there from /tarmac/env');
    assert.ok(path.includes('/usr/bin') && path.includes('/bin'), 'the runner keeps its tools (git, sh, tar)');
    assert.deepEqual(
      [declaration.env.NO_UPDATE_NOTIFIER, declaration.env.npm_config_update_notifier, declaration.env.npm_config_fund, declaration.env.npm_config_audit],
      ['1', 'false', 'false', 'false'],
    );
  });
});
