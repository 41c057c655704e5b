import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { WorkerOptions } from '@temporalio/worker';

/**
 * The prebuilt workflow bundle: `npm run build:workflows` (run by setup) bundles `workflows/` once
 * into `dist/workflow-bundle.js`, and `tarmac worker` (so `tarmac dev` too) loads it instead of
 * bundling at every start, as long as it is current. Current means: built from exactly the sources
 * on disk now. The bundle's key is a hash of every file of the folders the sandbox may import
 * (`workflows/`, `core/` but `core/node/`, `policies/`), the root package.json and the installed
 * dependency tree (`node_modules/.package-lock.json`); a build refuses to write a bundle that read
 * a project file outside those folders, so the key covers every input. A stale bundle is never
 * loaded: the worker says so and bundles from source, as it would without one.
 */
export const repositoryRoot = resolve(__dirname, '..');

/** The folders (relative to the root) whose files are the workflow bundle's sources, and the one excluded. */
const bundleSourceFolders = ['workflows', 'core', 'policies'] as const;
const excludedFolders = [join('core', 'node')];

/** Where the prebuilt bundle lives under a root; its meta (key, digest) sits beside it. */
export function prebuiltBundlePath(root = repositoryRoot): string {
  return join(root, 'dist', 'workflow-bundle.js');
}
/** The workflows' entry under a root (what the Worker bundles without a prebuilt bundle). */
function workflowsEntry(root = repositoryRoot): string {
  return join(root, 'workflows', 'index.ts');
}
const metaPathOf = (bundlePath: string) => bundlePath.replace(/\.js$/, '.json');

interface BundleMeta {
  /** The source key the bundle was built from (`workflowSourceKey`). */
  key: string;
  /** sha256 of the bundle's code: a bundle file that is not the one built is not current either. */
  codeSha256: string;
  /** The workflow SDK the bundle carries. */
  sdkVersion: string;
  builtAt: string;
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

function filesUnder(root: string, folder: string): string[] {
  const directory = join(root, folder);
  if (!existsSync(directory)) return [];
  const files: string[] = [];
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) {
      if (!excludedFolders.includes(path)) files.push(...filesUnder(root, path));
    } else if (entry.isFile()) {
      files.push(path);
    }
  }
  return files;
}

/** The key of the workflow sources under `root`: any change to a file the bundle may include changes it. */
export function workflowSourceKey(root = repositoryRoot): string {
  const installed = existsSync(join(root, 'node_modules', '.package-lock.json')) ? join('node_modules', '.package-lock.json') : 'package-lock.json';
  const files = [...bundleSourceFolders.flatMap((folder) => filesUnder(root, folder)), 'package.json', installed]
    .filter((path) => existsSync(join(root, path)))
    .sort();
  // Paths are written with '/', so a key does not depend on the platform's separator.
  return sha256(files.map((path) => `${path.split(sep).join('/')}\0${sha256(readFileSync(join(root, path)))}\n`).join(''));
}

type PrebuiltState = { state: 'current'; path: string; meta: BundleMeta } | { state: 'missing'; path: string } | { state: 'stale'; path: string; why: string };

/** Whether the prebuilt bundle at `path` was built from the sources under `root` as they are now. */
export function prebuiltBundleState(root = repositoryRoot, path = prebuiltBundlePath(root)): PrebuiltState {
  if (!existsSync(path) || !existsSync(metaPathOf(path))) return { state: 'missing', path };
  let meta: BundleMeta;
  try {
    meta = JSON.parse(readFileSync(metaPathOf(path), 'utf8')) as BundleMeta;
  } catch (error) {
    return { state: 'stale', path, why: `${metaPathOf(path)} is unreadable (${(error as Error).message})` };
  }
  if (meta.key !== workflowSourceKey(root)) return { state: 'stale', path, why: 'the workflow sources changed since it was built' };
  if (sha256(readFileSync(path)) !== meta.codeSha256) return { state: 'stale', path, why: `${path} is not the bundle its meta describes` };
  return { state: 'current', path, meta };
}

const quietLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
};

interface BuiltBundle {
  code: string;
  key: string;
  /** The project files (relative to the root) webpack read. */
  inputs: string[];
}

/**
 * Bundles the root's workflows with the options the Worker itself would use, and writes the code and
 * its meta to `outFile` when given (each through a rename, so a reader never sees half a bundle).
 * Refuses a bundle that read a project file outside the keyed folders, and one whose sources changed
 * while it was being built. With `workflowsPath`, bundles that module instead (a variant, e.g. the
 * version-switch test's): no key check and no meta, so it is only ever loaded by name.
 */
export async function buildWorkflowBundle(options: { root?: string; workflowsPath?: string; outFile?: string } = {}): Promise<BuiltBundle> {
  const root = options.root ?? repositoryRoot;
  const workflowsPath = options.workflowsPath ?? workflowsEntry(root);
  const keyBefore = workflowSourceKey(root);
  // A variant (another workflowsPath) is keyed by nobody: it gets no meta, and is loaded only when named.
  const variant = options.workflowsPath !== undefined;
  const read = new Set<string>();
  // Loaded here: checking whether a bundle is current needs none of the bundler.
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    logger: quietLogger,
    webpackConfigHook: (config) => ({
      ...config,
      plugins: [
        ...(config.plugins ?? []),
        {
          apply(compiler) {
            compiler.hooks.afterCompile.tap('tarmac-bundle-inputs', (compilation) => {
              for (const file of compilation.fileDependencies) read.add(file);
            });
          },
        },
      ],
    }),
  });
  // The project's files: those under the root, not installed packages (the key has their lock file).
  const inputs = [...read]
    .map((path) => relative(root, path))
    .filter(
      (path) =>
        !path.startsWith(`..${sep}`) && !path.split(sep).includes('node_modules') && existsSync(join(root, path)) && statSync(join(root, path)).isFile(),
    )
    .sort();
  const keyed = (path: string) =>
    path === 'package.json' ||
    (bundleSourceFolders.some((folder) => path.startsWith(`${folder}${sep}`)) && !excludedFolders.some((folder) => path.startsWith(`${folder}${sep}`)));
  // The generated entrypoint lives in webpack's memory file system, beside workflowsPath.
  const outside = inputs.filter((path) => !keyed(path) && !path.endsWith('-autogenerated-entrypoint.cjs'));
  if (!variant && outside.length > 0) {
    throw new Error(
      `the workflow bundle read ${outside.join(', ')}, outside the folders its key covers (${bundleSourceFolders.join(', ')}): add the folder to bundleSourceFolders in worker/workflow-bundle.ts`,
    );
  }
  if (!variant && workflowSourceKey(root) !== keyBefore) throw new Error('the workflow sources changed while they were being bundled; build again');
  if (options.outFile) {
    mkdirSync(dirname(options.outFile), { recursive: true });
    writeAtomically(options.outFile, code);
    if (!variant) {
      const meta: BundleMeta = { key: keyBefore, codeSha256: sha256(code), sdkVersion: workflowSdkVersion(), builtAt: new Date().toISOString() };
      writeAtomically(metaPathOf(options.outFile), `${JSON.stringify(meta, null, 2)}\n`);
    }
  }
  return { code, key: keyBefore, inputs };
}

function writeAtomically(path: string, content: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, content);
  renameSync(temporary, path);
}

function workflowSdkVersion(): string {
  return (JSON.parse(readFileSync(require.resolve('@temporalio/workflow/package.json'), 'utf8')) as { version: string }).version;
}

interface BundleLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/**
 * The workflow code a worker loads: the bundle `TARMAC_WORKFLOW_BUNDLE` names (the operator's
 * choice, taken as given), else the prebuilt bundle when it is current, else the sources (the
 * Worker bundles them at start, as without a prebuilt one). Every choice is logged.
 */
export function workflowCodeOption(
  explicitBundle: string | undefined,
  log: BundleLog,
  root = repositoryRoot,
): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (explicitBundle) {
    log.info({ workflowBundle: explicitBundle }, 'loading the workflow bundle TARMAC_WORKFLOW_BUNDLE names');
    return { workflowBundle: { codePath: explicitBundle } };
  }
  const prebuilt = prebuiltBundleState(root);
  if (prebuilt.state === 'current') {
    log.info({ workflowBundle: prebuilt.path, key: prebuilt.meta.key.slice(0, 12) }, 'loading the prebuilt workflow bundle');
    return { workflowBundle: { codePath: prebuilt.path } };
  }
  const workflowsPath = workflowsEntry(root);
  if (prebuilt.state === 'stale')
    log.warn(
      { workflowBundle: prebuilt.path, why: prebuilt.why },
      'the prebuilt workflow bundle is stale, not loaded; bundling the workflows from source (npm run build:workflows makes a current one)',
    );
  else log.info({ workflowBundle: prebuilt.path }, 'no prebuilt workflow bundle; bundling the workflows from source (npm run build:workflows makes one)');
  return { workflowsPath };
}
