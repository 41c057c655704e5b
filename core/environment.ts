import { defaultRunnerImage, gateFilePath, type GateFile } from './gate-file';
import { covers, environmentTimeoutMs, inputsWithDockerfile } from './environment-fields';
import type { EnvironmentDeclaration } from './environment-types';

export type { EnvironmentDeclaration } from './environment-types';
export { devcontainerPath, parseDevcontainer } from './devcontainer';

/** An input as read from the tree under test: a blob or tree (`oid`, git's `mode`), or nothing at that path. */
export type EnvironmentKeyInput = { path: string; oid: string; mode: string } | { path: string; absent: true };

/** Changes whenever the key text's shape or meaning changes, so old environments are never reused by mistake. */
export const environmentKeyVersion = 'environment-key-1';

/** The directory a repository-relative path is in (`.` for the root). */
function directoryOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash === -1 ? '.' : path.slice(0, slash);
}

/** The gate file's environment as a declaration; undefined when the gate file declares none. */
export function fromGateFile(gate: GateFile): EnvironmentDeclaration | undefined {
  const declared = gate.environment;
  if (!declared) return undefined;
  const dockerfile =
    declared.dockerfile === undefined
      ? undefined
      : { path: declared.dockerfile, context: declared.context ?? directoryOf(declared.dockerfile), args: { ...declared.args } };
  return {
    source: 'gate-file',
    file: gateFilePath,
    ...(dockerfile ? { dockerfile } : { image: declared.image ?? gate.image ?? defaultRunnerImage }),
    setup: [...declared.setup],
    inputs: inputsWithDockerfile(declared.inputs, dockerfile?.path),
    ...(declared.egress ? { egress: [...declared.egress] } : {}),
    cache: [...(declared.cache ?? [])],
    env: { ...declared.env },
    timeoutMs: environmentTimeoutMs(declared.timeout),
  };
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** JSON with every object's keys sorted (by code unit, never by locale) and undefined members left out: equal values, equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number' && Number.isFinite(value)) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => byCodeUnit(a, b));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  throw new Error(`canonicalJson: cannot write ${typeof value === 'number' ? String(value) : typeof value}`);
}

/**
 * The inputs as the key holds them: sorted by path, repeats of one entry merged (an input inside a
 * directory input is read twice). A caller that read paths the declaration does not name, or left
 * one out, or read one path two ways, would key the environment wrongly: that is a bug, and throws.
 */
function keyInputs(declared: readonly string[], read: readonly EnvironmentKeyInput[]): EnvironmentKeyInput[] {
  const byPath = new Map<string, EnvironmentKeyInput>();
  for (const entry of read) {
    const plain: EnvironmentKeyInput = 'absent' in entry ? { path: entry.path, absent: true } : { path: entry.path, oid: entry.oid, mode: entry.mode };
    if (!declared.some((input) => covers(input, entry.path))) throw new Error(`environmentKeyText: input "${entry.path}" is not under any declared input`);
    const earlier = byPath.get(entry.path);
    if (earlier && canonicalJson(earlier) !== canonicalJson(plain)) throw new Error(`environmentKeyText: input "${entry.path}" was read two ways`);
    byPath.set(entry.path, plain);
  }
  const missing = declared.find((input) => ![...byPath.keys()].some((path) => covers(input, path)));
  if (missing !== undefined) throw new Error(`environmentKeyText: declared input "${missing}" was not read (an absent path is { path, absent: true })`);
  return [...byPath.values()].sort((a, b) => byCodeUnit(a.path, b.path));
}

const sortedUnique = (values: readonly string[]) => [...new Set(values)].sort(byCodeUnit);

/**
 * The text whose sha256 (taken by the caller, in an activity) is the environment's key: everything
 * that changes what is built — the base image's ID (for a Dockerfile: the ID of what it starts
 * from, as the caller resolves it; the Dockerfile's own content is an input), the Dockerfile's
 * path, context and args, the setup lines in order, env, egress, cache paths, remoteUser, and every
 * input's content. Not in it: `source` and `file` (the same declaration in either file is the same
 * environment), the image's name (its ID says more), and the timeout (a longer limit builds the
 * same thing). Orders that mean nothing (inputs, egress, cache, object keys) are sorted away.
 */
export function environmentKeyText({
  declaration,
  baseImageId,
  inputs,
}: {
  declaration: EnvironmentDeclaration;
  baseImageId: string;
  inputs: EnvironmentKeyInput[];
}): string {
  return canonicalJson({
    version: environmentKeyVersion,
    baseImageId,
    dockerfile: declaration.dockerfile ?? null,
    setup: declaration.setup,
    env: declaration.env,
    // Absent and empty differ: absent keeps the operator's allow-list, [] reaches nothing.
    egress: declaration.egress === undefined ? null : sortedUnique(declaration.egress),
    cache: sortedUnique(declaration.cache),
    remoteUser: declaration.remoteUser ?? null,
    inputs: keyInputs(declaration.inputs, inputs),
  });
}

/** The whole declaration as canonical JSON, source and file included: what a run records it used. */
export function declarationDigestText(declaration: EnvironmentDeclaration): string {
  return canonicalJson(declaration);
}
