import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { gateFilePath, parseGateFile } from '../../core/gate-file';

const root = resolve(__dirname, '../..');

/**
 * The tool gates itself: Tarmac's own `.config/tarmac/land-gate.json` is a valid gate file whose
 * suites are the project's own checks (package.json scripts: typecheck, lint, the unit tier), in the
 * image setup builds for them (scripts/build-images.sh, images/self-gate). test/e2e/self-gate.test.ts
 * runs it for real.
 */
describe("Tarmac's own gate file", () => {
  const parsed = parseGateFile(readFileSync(join(root, gateFilePath), 'utf8'));
  const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

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

  it('names the image setup builds for it, which has what the suites need', () => {
    assert.ok(parsed.ok);
    const image = parsed.gate.image!;
    assert.equal(image, 'tarmac/self-gate:local');
    assert.match(readFileSync(join(root, 'scripts/build-images.sh'), 'utf8'), new RegExp(`self_gate_image ${image.replace(/[.:/]/g, '\\$&')}$`, 'm'), 'scripts/build-images.sh builds it');
    const dockerfile = readFileSync(join(root, 'images/self-gate/Dockerfile'), 'utf8');
    assert.match(dockerfile, /^FROM \$\{BASE_IMAGE\}$/m);
    assert.match(dockerfile, /^ARG BASE_IMAGE=tarmac\/runner:bookworm$/m, 'built on the runner (the sandbox every gate image gets)');
    assert.match(dockerfile, /^COPY node_modules \/node_modules$/m, 'node_modules where a tree at /workspace resolves them');
    assert.ok(existsSync(join(root, 'package-lock.json')));
  });
});
