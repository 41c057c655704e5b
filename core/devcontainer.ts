import { Type } from '@sinclair/typebox';
import {
  CacheSchema,
  EgressSchema,
  environmentLimits,
  environmentTimeoutMs,
  imagePattern,
  inputsWithDockerfile,
  InputsSchema,
  keyedFieldsProblem,
  memberField,
  repositoryPathProblem,
  TimeoutSchema,
  variablesProblem,
} from './environment-fields';
import type { EnvironmentDeclaration } from './environment-types';
import { schemaProblem } from './gate-file';
import { stripJsonComments } from './jsonc';

/**
 * A repository's `.devcontainer/devcontainer.json`, read as an environment declaration when the
 * gate file declares none. Tarmac takes the part of the devcontainer spec that makes sense for a
 * container built once and then run offline: `image` or `build` (`dockerfile`, `context`, `args`,
 * relative to `.devcontainer/` as the spec says), the create commands (`onCreateCommand`,
 * `updateContentCommand`, `postCreateCommand`, run in that order), `containerEnv`, `remoteUser`,
 * and its own keys under `customizations.tarmac` (`inputs`, `egress`, `cache`, `timeout`).
 * Keys that would make the container behave otherwise than the file says (compose, features, host
 * commands, start commands, docker options) are refused with what to do instead; editor keys and
 * harmless ones (`name`, `forwardPorts`, `customizations.vscode`, ...) are ignored.
 */

/** Where the devcontainer file lives, relative to the repository root. */
export const devcontainerPath = '.devcontainer/devcontainer.json';

/**
 * The inputs when `customizations.tarmac.inputs` names none: the devcontainer's own directory and
 * the usual manifests and lockfiles. Most repositories have a few of them; the others count as
 * absent in the key, so adding one later is a new environment.
 */
export const defaultDevcontainerInputs: readonly string[] = [
  '.devcontainer',
  ...['package.json', 'package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml'],
  ...['requirements.txt', 'requirements-dev.txt', 'pyproject.toml', 'poetry.lock', 'Pipfile.lock'],
  ...['go.mod', 'go.sum', 'Cargo.toml', 'Cargo.lock'],
];

type DevcontainerParse = { ok: true; declaration: EnvironmentDeclaration } | { ok: false; field: string; message: string };

/** Keys that change what the container is or does, which Tarmac cannot honour, and what to write instead. */
const unsupportedKeys: Record<string, string> = {
  dockerComposeFile: 'Tarmac runs one container: name an image or build.dockerfile, and let the tests start the services they need',
  features: 'Tarmac does not install devcontainer features: install what they provide in build.dockerfile or onCreateCommand',
  initializeCommand: 'it runs on the host, and Tarmac runs nothing of a repository on its hosts: move what the container needs to onCreateCommand',
  postStartCommand: 'Tarmac builds an environment once and starts it many times without commands: move it to postCreateCommand',
  postAttachCommand: 'Tarmac builds an environment once and attaches nothing to it: move it to postCreateCommand',
  runArgs: "Tarmac chooses the container's options (no network, its user, its limits): build what you need into the image",
  mounts: 'Tarmac mounts only the workspace: keep caches in customizations.tarmac.cache and tools in the image',
  remoteEnv: "Tarmac gives containerEnv to the setup, the gates and agents' commands alike: move the variables there",
  containerUser: "Tarmac runs the setup, the gates and agents' commands as one user: set remoteUser",
  privileged: 'Tarmac runs every container without extra privileges: remove it',
  capAdd: 'Tarmac runs every container without extra capabilities: remove it',
  securityOpt: "Tarmac sets the containers' security options itself: remove it",
  dockerFile: 'it is the old spelling of build.dockerfile: write it there',
  context: 'it is the old spelling of build.context: write it there',
};
const unsupportedBuildKeys: Record<string, string> = {
  target: "Tarmac builds the Dockerfile's last stage: make the stage you want the last one",
  options: 'Tarmac chooses the docker build options: remove it',
};

// Variables of the devcontainer spec. Tarmac does not substitute them: `${localEnv:...}` would read
// the worker's own environment (its secrets), and in a command line sh would quietly make the rest
// empty. A file that uses one is refused rather than built differently from what it says.
const specVariable =
  /\$\{(?:localEnv|containerEnv|localWorkspaceFolder|localWorkspaceFolderBasename|containerWorkspaceFolder|containerWorkspaceFolderBasename|devcontainerId)(?::[^}]*)?\}/;

const TarmacSchema = Type.Object(
  { inputs: Type.Optional(InputsSchema), egress: Type.Optional(EgressSchema), cache: Type.Optional(CacheSchema), timeout: Type.Optional(TimeoutSchema) },
  { additionalProperties: false },
);

/** Thrown inside this module only: the first thing wrong with the file, already named. */
class Refusal {
  constructor(
    readonly field: string,
    readonly message: string,
  ) {}
}
function refuse(field: string, message: string): never {
  throw new Refusal(field, message);
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isEmpty = (value: unknown) =>
  value === undefined ||
  value === null ||
  value === false ||
  value === '' ||
  (Array.isArray(value) && value.length === 0) ||
  (isObject(value) && Object.keys(value).length === 0);

/** A string of the file, refused when it uses a devcontainer variable. */
function stringAt(field: string, value: unknown): string {
  if (typeof value !== 'string') refuse(field, 'must be a string');
  const variable = specVariable.exec(value);
  if (variable) refuse(field, `uses ${variable[0]}, a devcontainer variable Tarmac does not substitute: write the value itself`);
  return value;
}

function strings(field: string, value: unknown): Record<string, string> {
  if (value === undefined) return {};
  if (!isObject(value)) refuse(field, 'must be an object of strings');
  // fromEntries defines each member, so even a variable named __proto__ is one (an assignment would not be).
  const out = Object.fromEntries(
    Object.entries(value).map(([name, member]) => {
      const checked = stringAt(memberField(field, name), member);
      if (checked.length > environmentLimits.valueLength) refuse(memberField(field, name), `is longer than ${environmentLimits.valueLength} characters`);
      return [name, checked];
    }),
  );
  const problem = variablesProblem(field, out);
  if (problem) refuse(problem.field, problem.message);
  return out;
}

/** A path the file gives relative to `.devcontainer/`, from the repository root (`.` is the root). */
function fromDevcontainerDirectory(field: string, value: unknown): string {
  const path = stringAt(field, value);
  if (path.startsWith('/')) refuse(field, 'must be relative to .devcontainer/ (a path from / is outside the repository)');
  const segments = ['.devcontainer'];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment !== '..') segments.push(segment);
    else if (segments.pop() === undefined) refuse(field, 'leads outside the repository');
  }
  const resolved = segments.join('/') || '.';
  const problem = resolved === '.' ? undefined : repositoryPathProblem(resolved);
  if (problem) refuse(field, `${problem} (it is "${resolved}" from the repository root)`);
  return resolved;
}

const plainWord = /^[A-Za-z0-9_@%+=:,./-]+$/;
const reservedWords = new Set(['case', 'do', 'done', 'elif', 'else', 'esac', 'fi', 'for', 'function', 'if', 'in', 'select', 'then', 'time', 'until', 'while']);

/**
 * An argv as one `sh -c` line that runs exactly it: a word sh would read otherwise is put in single
 * quotes (a quote inside becomes '\''). Plain words stay bare so logs read as typed, except a
 * reserved word, and a first word with "=" (sh would take it for an assignment).
 */
export function argvLine(argv: readonly string[]): string {
  return argv
    .map((word, index) =>
      plainWord.test(word) && !reservedWords.has(word) && !(index === 0 && word.includes('=')) ? word : `'${word.replaceAll("'", `'\\''`)}'`,
    )
    .join(' ');
}

function commandLine(field: string, value: unknown): string | undefined {
  let line: string;
  if (typeof value === 'string') line = stringAt(field, value);
  else if (Array.isArray(value)) line = argvLine(value.map((word, index) => stringAt(`${field}[${index}]`, word)));
  else refuse(field, 'must be a command: a string (run with sh -c) or an array (the argv)');
  if (line.trim() === '') return undefined;
  if (line.includes('\u0000')) refuse(field, 'contains a NUL character, which no command line can carry');
  if (line.length > environmentLimits.commandLength) refuse(field, `is longer than ${environmentLimits.commandLength} characters as a command line`);
  return line;
}

/** One create command: a string, an argv, or named commands (run one after another, in the file's order). */
function commandLines(field: string, value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!isObject(value)) return [commandLine(field, value)].filter((line) => line !== undefined);
  return Object.entries(value).flatMap(([name, command]) => [commandLine(memberField(field, name), command)].filter((line) => line !== undefined));
}

function base(data: Record<string, unknown>): Pick<EnvironmentDeclaration, 'image' | 'dockerfile'> {
  if (data.image !== undefined && data.build !== undefined) refuse('build', 'cannot be given with image: name a base image or build a Dockerfile, not both');
  if (data.image !== undefined) {
    const image = stringAt('image', data.image);
    if (!new RegExp(imagePattern).test(image)) refuse('image', 'is not an image reference (e.g. "node:24-bookworm")');
    return { image };
  }
  if (data.build === undefined) refuse('image', 'is required: name a base image, or a Dockerfile in build.dockerfile');
  if (!isObject(data.build)) refuse('build', 'must be an object (build.dockerfile, build.context, build.args)');
  const build = data.build;
  for (const [key, instead] of Object.entries(unsupportedBuildKeys)) if (!isEmpty(build[key])) refuse(`build.${key}`, `is not supported: ${instead}`);
  if (build.dockerfile === undefined) refuse('build.dockerfile', 'is required: the Dockerfile, relative to .devcontainer/');
  const path = fromDevcontainerDirectory('build.dockerfile', build.dockerfile);
  if (path === '.') refuse('build.dockerfile', 'names the repository root: name the Dockerfile itself');
  const context = build.context === undefined ? '.devcontainer' : fromDevcontainerDirectory('build.context', build.context);
  return { dockerfile: { path, context, args: strings('build.args', build.args) } };
}

function tarmacFields(customizations: unknown): { inputs?: string[]; egress?: string[]; cache?: string[]; timeout?: string } {
  if (customizations === undefined) return {};
  if (!isObject(customizations)) refuse('customizations', 'must be an object');
  const tarmac = customizations.tarmac;
  if (tarmac === undefined) return {};
  const problem = schemaProblem(TarmacSchema, tarmac, 'customizations.tarmac');
  if (problem) refuse(problem.field, problem.message);
  const fields = tarmac as { inputs?: string[]; egress?: string[]; cache?: string[]; timeout?: string };
  const keyed = keyedFieldsProblem('customizations.tarmac', fields);
  if (keyed) refuse(keyed.field, keyed.message);
  return fields;
}

function declaration(data: Record<string, unknown>): EnvironmentDeclaration {
  for (const [key, instead] of Object.entries(unsupportedKeys)) if (!isEmpty(data[key])) refuse(key, `is not supported: ${instead}`);
  const { image, dockerfile } = base(data);
  const setup: string[] = [];
  for (const key of ['onCreateCommand', 'updateContentCommand', 'postCreateCommand']) {
    setup.push(...commandLines(key, data[key]));
    if (setup.length > environmentLimits.setupCommands)
      refuse(
        key,
        `makes more than ${environmentLimits.setupCommands} commands with the ones before it (onCreateCommand, updateContentCommand, postCreateCommand)`,
      );
  }
  const env = strings('containerEnv', data.containerEnv);
  const remoteUser = data.remoteUser === undefined ? undefined : stringAt('remoteUser', data.remoteUser);
  if (remoteUser !== undefined && !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$/.test(remoteUser)) refuse('remoteUser', 'must be a user name or a numeric user ID');
  const tarmac = tarmacFields(data.customizations);
  return {
    source: 'devcontainer',
    file: devcontainerPath,
    ...(dockerfile ? { dockerfile } : { image }),
    setup,
    inputs: inputsWithDockerfile(tarmac.inputs ?? defaultDevcontainerInputs, dockerfile?.path),
    ...(tarmac.egress ? { egress: [...tarmac.egress] } : {}),
    cache: [...(tarmac.cache ?? [])],
    env,
    timeoutMs: environmentTimeoutMs(tarmac.timeout),
    ...(remoteUser !== undefined ? { remoteUser } : {}),
  };
}

/** Parses and checks a devcontainer.json (JSON with comments); the error names the field and what to do. */
export function parseDevcontainer(text: string): DevcontainerParse {
  const stripped = stripJsonComments(text);
  if (!stripped.ok) return { ok: false, field: '(root)', message: stripped.message };
  let data: unknown;
  try {
    data = JSON.parse(stripped.json);
  } catch (error) {
    return { ok: false, field: '(root)', message: `is not valid JSON with comments: ${(error as Error).message}` };
  }
  if (!isObject(data)) return { ok: false, field: '(root)', message: 'must be an object' };
  try {
    return { ok: true, declaration: declaration(data) };
  } catch (error) {
    if (error instanceof Refusal) return { ok: false, field: error.field, message: error.message };
    throw error;
  }
}
