/**
 * `npm run build:dashboard`: bundles the operator's dashboard (dashboard/: Preact + TypeScript)
 * with esbuild into dist/dashboard/ (index.html, app.js, app.css, favicon.svg), which the API
 * serves at /dashboard/. Setup and the tarmac image run it; it takes well under a second, so it
 * always builds. The output is written beside and swapped in whole: a running API never serves
 * half a build.
 */
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { build } from 'esbuild';

const root = resolve(__dirname, '..');
const source = join(root, 'dashboard');

/** Where the API looks for the dashboard by default. */
export const defaultDashboardDir = join(root, 'dist', 'dashboard');

/** Builds the dashboard into `outDir`; returns the files written. */
export async function buildDashboard(outDir: string = defaultDashboardDir): Promise<string[]> {
  const staging = `${outDir}.building-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    await build({
      entryPoints: [join(source, 'src', 'main.tsx')],
      outfile: join(staging, 'app.js'),
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      jsx: 'automatic',
      jsxImportSource: 'preact',
      tsconfig: join(source, 'tsconfig.json'),
      minify: true,
      // Preact's licence comment stays with its code.
      legalComments: 'eof',
      logLevel: 'silent',
    });
    copyFileSync(join(source, 'index.html'), join(staging, 'index.html'));
    copyFileSync(join(source, 'style.css'), join(staging, 'app.css'));
    copyFileSync(join(source, 'favicon.svg'), join(staging, 'favicon.svg'));
    mkdirSync(dirname(outDir), { recursive: true });
    if (existsSync(outDir)) rmSync(outDir, { recursive: true, force: true });
    renameSync(staging, outDir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
  return ['index.html', 'app.js', 'app.css', 'favicon.svg'].map((file) => join(outDir, file));
}

if (require.main === module) {
  const started = Date.now();
  buildDashboard(process.argv[2] ? resolve(process.argv[2]) : defaultDashboardDir).then(
    (files) => process.stderr.write(`[build:dashboard] ${dirname(files[0]!)}: ${files.length} files in ${Date.now() - started} ms\n`),
    (error: unknown) => {
      process.stderr.write(`[build:dashboard] error: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
