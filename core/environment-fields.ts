import { Type, type Static } from '@sinclair/typebox';
import { durationPattern, parseDuration } from './duration';
import { parseEgressHost } from './egress-hosts';

/**
 * The fields of an environment declaration and the rules a schema cannot say (paths that stay in
 * the repository, host names, variable names). The gate file's `environment` is validated with them,
 * and so are a devcontainer's `customizations.tarmac` and `containerEnv`, so the same mistake gets
 * the same message in either file. Each check returns why a value is refused, or undefined.
 */

/** An image reference as the gate file accepts it (`name[:tag][@digest]`). */
export const imagePattern = '^[a-zA-Z0-9][a-zA-Z0-9._/:@-]*$';

/** How long an environment's whole setup may take when the declaration names no `timeout`. */
const defaultEnvironmentTimeout = '20m';

/** Where cache paths live: the home of the user a setup runs as. */
const cacheRoot = '/tmp/home/';

export const environmentLimits = { setupCommands: 32, commandLength: 4096, valueLength: 4096, inputs: 64, cache: 8, egress: 64 } as const;

/** The whole setup's limit in milliseconds (the declaration's `timeout`, or 20 minutes). */
export function environmentTimeoutMs(timeout?: string): number {
  return parseDuration(timeout ?? defaultEnvironmentTimeout) ?? 1_200_000;
}

/** Does the input (a file or directory) hold `path`? */
export const covers = (input: string, path: string) => path === input || path.startsWith(`${input}/`);

/** The declared inputs, with a Dockerfile added when none of them holds it already: what it says is part of what is built. */
export function inputsWithDockerfile(inputs: readonly string[], dockerfile: string | undefined): string[] {
  if (dockerfile === undefined || inputs.some((input) => covers(input, dockerfile))) return [...inputs];
  return [...inputs, dockerfile];
}

interface FieldProblem {
  field: string;
  message: string;
}

const pathText = (description: string) => Type.String({ minLength: 1, maxLength: 1024, description });

export const InputsSchema = Type.Array(pathText('a repository-relative path of a file or directory, e.g. "package-lock.json"'), {
  minItems: 1,
  maxItems: environmentLimits.inputs,
  description: 'the files and directories whose content keys the environment, 1 to 64',
});
export const EgressSchema = Type.Array(Type.String({ description: 'a lowercase host name, e.g. "mirror.example.org" or "*.example.org"' }), {
  maxItems: environmentLimits.egress,
  description: "the hosts the setup needs, within the operator's allow-list",
});
export const CacheSchema = Type.Array(pathText('a directory under /tmp/home/, e.g. "/tmp/home/.npm"'), {
  maxItems: environmentLimits.cache,
  description: 'container directories a later build of the repository may reuse, at most 8',
});
export const TimeoutSchema = Type.String({ pattern: durationPattern, description: 'the whole setup\'s limit, e.g. "30s", "20m" or "1h"; default "20m"' });

const variables = (description: string) =>
  Type.Record(Type.String(), Type.String({ maxLength: environmentLimits.valueLength, description: 'a value of at most 4096 characters' }), { description });

export const EnvironmentSchema = Type.Object(
  {
    image: Type.Optional(Type.String({ minLength: 1, pattern: imagePattern, description: 'the base image, e.g. "node:24-bookworm"' })),
    dockerfile: Type.Optional(pathText('the repository-relative path of a Dockerfile to build the base from')),
    context: Type.Optional(pathText('the build context: a repository-relative directory, "." for the root (default: the Dockerfile\'s directory)')),
    args: Type.Optional(variables('build arguments for the Dockerfile')),
    setup: Type.Array(
      Type.String({ minLength: 1, maxLength: environmentLimits.commandLength, description: 'a non-empty shell command line of at most 4096 characters' }),
      { maxItems: environmentLimits.setupCommands, description: 'shell command lines run in order with sh -c: at most 32, may be empty' },
    ),
    inputs: InputsSchema,
    egress: Type.Optional(EgressSchema),
    cache: Type.Optional(CacheSchema),
    env: Type.Optional(variables("variables for the setup, the gates and agents' commands")),
    timeout: Type.Optional(TimeoutSchema),
  },
  { additionalProperties: false, description: 'the environment the gates and agents run in' },
);

type EnvironmentFields = Static<typeof EnvironmentSchema>;

const hasControlCharacter = (text: string) => [...text].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f);

/** Why a repository-relative path cannot name a file or directory of the tree, or undefined. */
export function repositoryPathProblem(path: string): string | undefined {
  if (path.startsWith('/')) return 'must be relative to the repository root (no leading "/")';
  if (hasControlCharacter(path)) return 'contains a control character';
  if (/[*?[\]{}\\]/.test(path)) return 'is a pattern or has a backslash: name the file or directory itself, with "/" between its parts';
  for (const segment of path.split('/')) {
    if (segment === '') return 'has an empty segment (a doubled or trailing "/")';
    if (segment === '.' || segment === '..') return 'has a "." or ".." segment: write the path from the repository root';
    if (segment.toLowerCase() === '.git') return "names .git, git's own data, which is no part of the tree";
  }
  return undefined;
}

/** Why a cache path is refused, or undefined. */
function cachePathProblem(path: string): string | undefined {
  if (!path.startsWith(cacheRoot) || path.length === cacheRoot.length)
    return `must be a directory under ${cacheRoot} (the home of the setup's user), e.g. "/tmp/home/.npm"`;
  if (hasControlCharacter(path)) return 'contains a control character';
  for (const segment of path.slice(cacheRoot.length).split('/')) {
    if (segment === '') return 'has an empty segment (a doubled or trailing "/")';
    if (segment === '.' || segment === '..') return `has a "." or ".." segment: write the path from ${cacheRoot}`;
  }
  return undefined;
}

/** Why an egress entry is refused, or undefined; entries are written as the gateway compares them. */
function egressEntryProblem(entry: string): string | undefined {
  const parsed = parseEgressHost(entry);
  if (!parsed.ok) return parsed.message;
  return parsed.host === entry ? undefined : `must be written "${parsed.host}" (lowercase, no trailing dot)`;
}

// Tarmac points these at the egress gateway; a declaration that set them would route the setup
// around it (and fail) or, in a later gate, leak a proxy setting into a container with no network.
const proxyVariables = new Set(['http_proxy', 'https_proxy', 'no_proxy', 'all_proxy', 'ftp_proxy']);

/** Why a variable name (in `env`, `args`, `containerEnv`, `build.args`) is refused, or undefined. */
function variableNameProblem(name: string): string | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return 'is not a variable name (letters, digits and "_", not starting with a digit)';
  if (name.toUpperCase().startsWith('TARMAC_')) return "starts with TARMAC_, which is kept for Tarmac's own settings";
  if (proxyVariables.has(name.toLowerCase())) return 'is set by Tarmac: the setup reaches the network only through the egress gateway';
  return undefined;
}

/** `field.key`, or `field["key"]` when the key is not a plain name: how messages name an object's member. */
export function memberField(field: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key) ? `${field}.${key}` : `${field}[${JSON.stringify(key)}]`;
}

export function variablesProblem(field: string, values: Record<string, string> | undefined): FieldProblem | undefined {
  for (const [name, value] of Object.entries(values ?? {})) {
    const why = variableNameProblem(name) ?? (value.includes('\u0000') ? 'contains a NUL character, which no variable can carry' : undefined);
    if (why) return { field: memberField(field, name), message: why };
  }
  return undefined;
}

function listProblem(field: string, values: readonly string[] | undefined, problem: (value: string) => string | undefined): FieldProblem | undefined {
  const seen = new Map<string, number>();
  for (const [index, value] of (values ?? []).entries()) {
    const why = problem(value);
    if (why) return { field: `${field}[${index}]`, message: why };
    const first = seen.get(value);
    if (first !== undefined) return { field: `${field}[${index}]`, message: `repeats ${field}[${first}]` };
    seen.set(value, index);
  }
  return undefined;
}

/** Inputs name distinct parts of the tree: an input inside another is already keyed by it. */
function inputsProblem(field: string, inputs: readonly string[] | undefined): FieldProblem | undefined {
  const problem = listProblem(field, inputs, repositoryPathProblem);
  if (problem || !inputs) return problem;
  for (const [index, input] of inputs.entries()) {
    const outer = inputs.findIndex((other) => other !== input && covers(other, input));
    if (outer !== -1) return { field: `${field}[${index}]`, message: `is inside ${field}[${outer}] ("${inputs[outer]}"), which already keys it` };
  }
  return undefined;
}

/** The rules beyond the schema for the fields the gate file and a devcontainer's `customizations.tarmac` share. */
export function keyedFieldsProblem(
  prefix: string,
  fields: { inputs?: string[]; egress?: string[]; cache?: string[]; timeout?: string },
): FieldProblem | undefined {
  return (
    inputsProblem(`${prefix}.inputs`, fields.inputs) ??
    listProblem(`${prefix}.egress`, fields.egress, egressEntryProblem) ??
    listProblem(`${prefix}.cache`, fields.cache, cachePathProblem) ??
    (fields.timeout !== undefined && environmentTimeoutMs(fields.timeout) === 0 ? { field: `${prefix}.timeout`, message: 'must be longer than 0' } : undefined)
  );
}

/** The gate file's `environment`, past its schema: an image or a Dockerfile, paths in the tree, names Tarmac can pass on. */
export function environmentProblem(environment: EnvironmentFields, prefix = 'environment'): FieldProblem | undefined {
  const { image, dockerfile, context, args } = environment;
  if (image !== undefined && dockerfile !== undefined)
    return { field: `${prefix}.dockerfile`, message: `cannot be given with ${prefix}.image: name a base image or a Dockerfile, not both` };
  for (const [name, given] of [
    ['context', context],
    ['args', args],
  ] as const) {
    if (given !== undefined && dockerfile === undefined)
      return { field: `${prefix}.${name}`, message: `applies only to a Dockerfile: give ${prefix}.dockerfile, or remove it` };
  }
  const dockerfileWhy = dockerfile === undefined ? undefined : repositoryPathProblem(dockerfile);
  if (dockerfileWhy) return { field: `${prefix}.dockerfile`, message: dockerfileWhy };
  const contextWhy = context === undefined || context === '.' ? undefined : repositoryPathProblem(context);
  if (contextWhy) return { field: `${prefix}.context`, message: contextWhy };
  const nul = environment.setup.findIndex((line) => line.includes('\u0000'));
  if (nul !== -1) return { field: `${prefix}.setup[${nul}]`, message: 'contains a NUL character, which no command line can carry' };
  return variablesProblem(`${prefix}.args`, args) ?? variablesProblem(`${prefix}.env`, environment.env) ?? keyedFieldsProblem(prefix, environment);
}
