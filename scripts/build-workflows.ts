/**
 * `npm run build:workflows`: bundles the workflows into dist/workflow-bundle.js (and its meta,
 * dist/workflow-bundle.json), which `tarmac worker` and `tarmac dev` load while it is current
 * (worker/workflow-bundle.ts). Does nothing when the bundle there is already current; `--force`
 * builds anyway. Setup runs it.
 */
import { buildWorkflowBundle, prebuiltBundlePath, prebuiltBundleState } from '../worker/workflow-bundle';

async function main(argv: string[]): Promise<number> {
  const force = argv.includes('--force');
  const unknown = argv.filter((arg) => arg !== '--force');
  if (unknown.length > 0) {
    process.stderr.write(`build-workflows: unknown argument ${unknown.join(' ')} (only --force)\n`);
    return 2;
  }
  const before = prebuiltBundleState();
  if (before.state === 'current' && !force) {
    process.stderr.write(`[build:workflows] ${before.path} is current (key ${before.meta.key.slice(0, 12)})\n`);
    return 0;
  }
  const started = Date.now();
  const built = await buildWorkflowBundle({ outFile: prebuiltBundlePath() });
  process.stderr.write(
    `[build:workflows] ${prebuiltBundlePath()}: ${(built.code.length / 1e6).toFixed(2)} MB from ${built.inputs.length} source files (key ${built.key.slice(0, 12)}) in ${((Date.now() - started) / 1000).toFixed(1)} s${before.state === 'stale' ? ` (was stale: ${before.why})` : ''}\n`,
  );
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`[build:workflows] error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
