import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { argvLine, defaultDevcontainerInputs, devcontainerPath, parseDevcontainer } from '../../core/devcontainer';
import type { EnvironmentDeclaration } from '../../core/environment';

const minimal = { image: 'node:24-bookworm' };
const json = (value: object) => JSON.stringify(value, null, 2);
const declared = (fields: Partial<EnvironmentDeclaration>): EnvironmentDeclaration => ({
  source: 'devcontainer',
  file: devcontainerPath,
  image: 'node:24-bookworm',
  setup: [],
  inputs: [...defaultDevcontainerInputs],
  cache: [],
  env: {},
  timeoutMs: 1_200_000,
  ...fields,
});

const accepted: { name: string; input: string; expected: EnvironmentDeclaration }[] = [
  { name: 'an image alone: the defaults', input: json(minimal), expected: declared({}) },
  {
    name: 'comments, trailing commas and a "//" in a string',
    input: '{\n  // the base\n  "image": "node:24-bookworm", /* why */\n  "postCreateCommand": "curl -fsS http://mirror.example.org/x // not a comment",\n}\n',
    expected: declared({ setup: ['curl -fsS http://mirror.example.org/x // not a comment'] }),
  },
  {
    name: 'a Dockerfile beside the file: the context is .devcontainer, already an input',
    input: json({ build: { dockerfile: 'Dockerfile', args: { VARIANT: '24' } } }),
    expected: declared({ image: undefined, dockerfile: { path: '.devcontainer/Dockerfile', context: '.devcontainer', args: { VARIANT: '24' } } }),
  },
  {
    name: 'a Dockerfile elsewhere with the root as context: the Dockerfile becomes an input',
    input: json({ build: { dockerfile: '../docker/dev.Dockerfile', context: '..' }, customizations: { tarmac: { inputs: ['package-lock.json'] } } }),
    expected: declared({
      image: undefined,
      dockerfile: { path: 'docker/dev.Dockerfile', context: '.', args: {} },
      inputs: ['package-lock.json', 'docker/dev.Dockerfile'],
    }),
  },
  {
    name: 'a "./" path and a doubled slash are read as the spec reads paths',
    input: json({ build: { dockerfile: './/Dockerfile', context: './' } }),
    expected: declared({ image: undefined, dockerfile: { path: '.devcontainer/Dockerfile', context: '.devcontainer', args: {} } }),
  },
  {
    name: 'the three create commands in order, each form',
    input: json({
      ...minimal,
      postCreateCommand: { test: 'npm test', build: ['npm', 'run', 'build'] },
      onCreateCommand: ['npm', 'ci', '--prefer-offline'],
      updateContentCommand: 'npm run prepare',
    }),
    expected: declared({ setup: ['npm ci --prefer-offline', 'npm run prepare', 'npm test', 'npm run build'] }),
  },
  {
    name: 'an argv with words sh would read otherwise',
    input: json({ ...minimal, postCreateCommand: ['echo', "it's", '$HOME', 'a b'] }),
    expected: declared({ setup: [`echo 'it'\\''s' '$HOME' 'a b'`] }),
  },
  {
    name: 'empty commands make no setup lines',
    input: json({ ...minimal, onCreateCommand: '', updateContentCommand: [], postCreateCommand: {} }),
    expected: declared({}),
  },
  {
    name: 'containerEnv, remoteUser and every Tarmac key',
    input: json({
      ...minimal,
      containerEnv: { NODE_ENV: 'test', PIP_NO_CACHE_DIR: '' },
      remoteUser: 'node',
      customizations: {
        vscode: { extensions: ['x'] },
        tarmac: { inputs: ['package-lock.json'], egress: ['mirror.example.org'], cache: ['/tmp/home/.npm'], timeout: '45m' },
      },
    }),
    expected: declared({
      env: { NODE_ENV: 'test', PIP_NO_CACHE_DIR: '' },
      remoteUser: 'node',
      inputs: ['package-lock.json'],
      egress: ['mirror.example.org'],
      cache: ['/tmp/home/.npm'],
      timeoutMs: 2_700_000,
    }),
  },
  {
    name: 'a variable named __proto__ is a variable',
    input: '{"image": "node:24-bookworm", "containerEnv": {"__proto__": "x"}}',
    expected: declared({ env: JSON.parse('{"__proto__": "x"}') }),
  },
  {
    name: 'editor keys and harmless ones are ignored',
    input: json({
      ...minimal,
      name: 'dev',
      forwardPorts: [3000],
      appPort: 8080,
      features: {},
      runArgs: [],
      mounts: [],
      privileged: false,
      waitFor: 'postCreateCommand',
      hostRequirements: { cpus: 2 },
    }),
    expected: declared({}),
  },
];

const refused: { name: string; input: string; field: string; message: RegExp }[] = [
  { name: 'not JSON', input: '{ "image": ', field: '(root)', message: /not valid JSON with comments/ },
  { name: 'a comment never closed', input: '{ "image": "x" /* open', field: '(root)', message: /not closed/ },
  { name: 'not an object', input: '["node:24"]', field: '(root)', message: /object/ },
  { name: 'no image and no build', input: json({ postCreateCommand: 'npm ci' }), field: 'image', message: /required/ },
  { name: 'an image and a build', input: json({ ...minimal, build: { dockerfile: 'Dockerfile' } }), field: 'build', message: /not both/ },
  { name: 'an image that is no reference', input: json({ image: 'node 24' }), field: 'image', message: /image reference/ },
  { name: 'a build without a Dockerfile', input: json({ build: { context: '..' } }), field: 'build.dockerfile', message: /required/ },
  { name: 'a build that is a string', input: json({ build: 'Dockerfile' }), field: 'build', message: /object/ },
  {
    name: 'a Dockerfile outside the repository',
    input: json({ build: { dockerfile: '../../Dockerfile' } }),
    field: 'build.dockerfile',
    message: /outside the repository/,
  },
  { name: 'a Dockerfile from /', input: json({ build: { dockerfile: '/srv/Dockerfile' } }), field: 'build.dockerfile', message: /relative to \.devcontainer/ },
  {
    name: 'a Dockerfile in .git',
    input: json({ build: { dockerfile: '../.git/Dockerfile' } }),
    field: 'build.dockerfile',
    message: /\.git.*"\.git\/Dockerfile" from the repository root/,
  },
  { name: 'the root as a Dockerfile', input: json({ build: { dockerfile: '..' } }), field: 'build.dockerfile', message: /repository root/ },
  {
    name: 'a build target',
    input: json({ build: { dockerfile: 'Dockerfile', target: 'dev' } }),
    field: 'build.target',
    message: /not supported: Tarmac .*last/,
  },
  {
    name: 'build options',
    input: json({ build: { dockerfile: 'Dockerfile', options: ['--network=host'] } }),
    field: 'build.options',
    message: /not supported: Tarmac/,
  },
  { name: 'a build arg that is a number', input: json({ build: { dockerfile: 'Dockerfile', args: { V: 24 } } }), field: 'build.args.V', message: /string/ },
  {
    name: 'a compose file',
    input: json({ dockerComposeFile: 'compose.yml', service: 'app' }),
    field: 'dockerComposeFile',
    message: /not supported: Tarmac .*one container/,
  },
  {
    name: 'features',
    input: json({ ...minimal, features: { 'ghcr.io/devcontainers/features/go:1': {} } }),
    field: 'features',
    message: /not supported: Tarmac .*onCreateCommand/,
  },
  { name: 'a host command', input: json({ ...minimal, initializeCommand: 'make pull' }), field: 'initializeCommand', message: /runs on the host/ },
  { name: 'a start command', input: json({ ...minimal, postStartCommand: 'npm start' }), field: 'postStartCommand', message: /postCreateCommand/ },
  { name: 'an attach command', input: json({ ...minimal, postAttachCommand: ['bash'] }), field: 'postAttachCommand', message: /postCreateCommand/ },
  { name: 'docker run options', input: json({ ...minimal, runArgs: ['--network=host'] }), field: 'runArgs', message: /not supported: Tarmac/ },
  { name: 'mounts', input: json({ ...minimal, mounts: ['source=x,target=/y,type=bind'] }), field: 'mounts', message: /customizations\.tarmac\.cache/ },
  { name: 'remoteEnv', input: json({ ...minimal, remoteEnv: { PATH: '/x' } }), field: 'remoteEnv', message: /containerEnv/ },
  { name: 'privileged', input: json({ ...minimal, privileged: true }), field: 'privileged', message: /privileges/ },
  { name: 'the old dockerFile key', input: json({ dockerFile: 'Dockerfile' }), field: 'dockerFile', message: /build\.dockerfile/ },
  { name: 'a command that is a number', input: json({ ...minimal, postCreateCommand: 1 }), field: 'postCreateCommand', message: /string .* or an array/ },
  {
    name: 'a named command that is an object',
    input: json({ ...minimal, postCreateCommand: { install: { run: 'x' } } }),
    field: 'postCreateCommand.install',
    message: /a string .* or an array/,
  },
  {
    name: 'an argv word that is a number',
    input: json({ ...minimal, onCreateCommand: { install: ['npm', 1] } }),
    field: 'onCreateCommand.install[1]',
    message: /string/,
  },
  { name: 'a command with a NUL', input: json({ ...minimal, onCreateCommand: ['echo', 'a\u0000b'] }), field: 'onCreateCommand', message: /NUL/ },
  { name: 'a command too long', input: json({ ...minimal, postCreateCommand: 'x'.repeat(4097) }), field: 'postCreateCommand', message: /4096/ },
  {
    name: '33 commands in all',
    input: json({
      ...minimal,
      onCreateCommand: Object.fromEntries(Array.from({ length: 30 }, (_, index) => [`c${index}`, 'true'])),
      postCreateCommand: { a: 'x', b: 'y', c: 'z' },
    }),
    field: 'postCreateCommand',
    message: /more than 32/,
  },
  {
    name: 'a devcontainer variable in a command',
    input: json({ ...minimal, postCreateCommand: 'cd ${containerWorkspaceFolder} && npm ci' }),
    field: 'postCreateCommand',
    message: /\$\{containerWorkspaceFolder\}.*does not substitute/,
  },
  {
    name: "the worker's environment in containerEnv",
    input: json({ ...minimal, containerEnv: { TOKEN: '${localEnv:GITHUB_TOKEN}' } }),
    field: 'containerEnv.TOKEN',
    message: /\$\{localEnv:GITHUB_TOKEN\}/,
  },
  {
    name: 'a containerEnv name Tarmac keeps',
    input: json({ ...minimal, containerEnv: { TARMAC_DATA_DIR: '/x' } }),
    field: 'containerEnv.TARMAC_DATA_DIR',
    message: /TARMAC_/,
  },
  {
    name: 'a containerEnv proxy',
    input: json({ ...minimal, containerEnv: { HTTPS_PROXY: 'http://x' } }),
    field: 'containerEnv.HTTPS_PROXY',
    message: /egress gateway/,
  },
  { name: 'containerEnv as a list', input: json({ ...minimal, containerEnv: ['A=b'] }), field: 'containerEnv', message: /object/ },
  { name: 'a remoteUser that is no name', input: json({ ...minimal, remoteUser: 'a b' }), field: 'remoteUser', message: /user name/ },
  { name: 'customizations that are a list', input: json({ ...minimal, customizations: [] }), field: 'customizations', message: /object/ },
  {
    name: 'an unknown Tarmac key',
    input: json({ ...minimal, customizations: { tarmac: { setup: ['x'] } } }),
    field: 'customizations.tarmac.setup',
    message: /valid fields: inputs, egress, cache, timeout/,
  },
  {
    name: 'an absolute Tarmac input',
    input: json({ ...minimal, customizations: { tarmac: { inputs: ['/etc/hosts'] } } }),
    field: 'customizations.tarmac.inputs[0]',
    message: /relative/,
  },
  {
    name: 'no Tarmac inputs',
    input: json({ ...minimal, customizations: { tarmac: { inputs: [] } } }),
    field: 'customizations.tarmac.inputs',
    message: /length/,
  },
  {
    name: 'a glob Tarmac input',
    input: json({ ...minimal, customizations: { tarmac: { inputs: ['package.json', 'requirements*.txt'] } } }),
    field: 'customizations.tarmac.inputs[1]',
    message: /pattern/,
  },
  {
    name: 'a Tarmac egress URL',
    input: json({ ...minimal, customizations: { tarmac: { egress: ['https://mirror.example.org/simple'] } } }),
    field: 'customizations.tarmac.egress[0]',
    message: /URL/,
  },
  {
    name: 'a Tarmac cache outside home',
    input: json({ ...minimal, customizations: { tarmac: { cache: ['/var/cache/apt'] } } }),
    field: 'customizations.tarmac.cache[0]',
    message: /\/tmp\/home\//,
  },
  {
    name: 'a Tarmac timeout in words',
    input: json({ ...minimal, customizations: { tarmac: { timeout: 'an hour' } } }),
    field: 'customizations.tarmac.timeout',
    message: /"20m"/,
  },
];

describe('parseDevcontainer', () => {
  for (const { name, input, expected } of accepted) {
    it(name, () => assert.deepEqual(parseDevcontainer(input), { ok: true, declaration: JSON.parse(JSON.stringify(expected)) }));
  }
  for (const { name, input, field, message } of refused) {
    it(`refuses ${name}`, () => {
      const result = parseDevcontainer(input);
      assert.equal(result.ok, false, JSON.stringify(result));
      if (result.ok) return;
      assert.equal(result.field, field, result.message);
      assert.match(result.message, message);
    });
  }
});

describe('argvLine', () => {
  const table: { argv: string[]; expected: string }[] = [
    { argv: ['npm', 'ci'], expected: 'npm ci' },
    {
      argv: ['pip', 'install', '-r', 'requirements.txt', '--index-url=https://mirror.example.org/simple'],
      expected: 'pip install -r requirements.txt --index-url=https://mirror.example.org/simple',
    },
    { argv: ['echo', "it's"], expected: `echo 'it'\\''s'` },
    { argv: ['echo', ''], expected: `echo ''` },
    { argv: ['FOO=bar', 'x'], expected: `'FOO=bar' x` },
    { argv: ['if'], expected: `'if'` },
    { argv: ['echo', '~', '#x', '*', 'a;b'], expected: `echo '~' '#x' '*' 'a;b'` },
  ];
  for (const { argv, expected } of table) it(`${JSON.stringify(argv)} → ${expected}`, () => assert.equal(argvLine(argv), expected));

  it('sh -c runs exactly the argv, whatever its words hold', () => {
    const words = ["it's", 'a b', '', '$HOME', '`id`', '$(id)', '"q"', 'x\ny', '*', '~', '#c', 'a;b|c&d', 'FOO=bar', '\\', '!', 'if', '${x}', "''", 'é'];
    const line = argvLine([process.execPath, '-e', 'process.stdout.write(JSON.stringify(process.argv.slice(1)))', ...words]);
    assert.deepEqual(JSON.parse(execFileSync('sh', ['-c', line], { encoding: 'utf8' })), words);
  });
  it('a reserved word as the program is run as a program, not read as syntax', () => {
    // Unquoted, `if` is a syntax error (exit 2); quoted, sh looks for a program named if (127).
    assert.throws(
      () => execFileSync('sh', ['-c', argvLine(['if'])], { stdio: 'pipe' }),
      (error: { status: number }) => error.status === 127,
    );
  });
});
