import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  canonicalJson,
  declarationDigestText,
  environmentKeyText,
  environmentKeyVersion,
  fromGateFile,
  parseDevcontainer,
  type EnvironmentDeclaration,
  type EnvironmentKeyInput,
} from '../../core/environment';
import { defaultRunnerImage, gateFilePath, parseGateFile, type GateFile } from '../../core/gate-file';

const gate = (environment: object | undefined, extra: object = {}): GateFile => {
  const parsed = parseGateFile(JSON.stringify({ version: 1, suites: [{ id: 'test', run: ['npm', 'test'] }], environment, ...extra }));
  assert.ok(parsed.ok, JSON.stringify(parsed));
  return parsed.gate;
};

describe('fromGateFile', () => {
  const npm = { setup: ['npm ci'], inputs: ['package.json', 'package-lock.json'] };
  const table: { name: string; gate: GateFile; expected: EnvironmentDeclaration | undefined }[] = [
    { name: 'no environment', gate: gate(undefined), expected: undefined },
    {
      name: "no image: the runner's, and the defaults",
      gate: gate(npm),
      expected: {
        source: 'gate-file',
        file: gateFilePath,
        image: defaultRunnerImage,
        setup: ['npm ci'],
        inputs: ['package.json', 'package-lock.json'],
        cache: [],
        env: {},
        timeoutMs: 1_200_000,
      },
    },
    { name: "no image: the gate file's", gate: gate(npm, { image: 'node:24-bookworm' }), expected: { ...fromGateFile(gate(npm))!, image: 'node:24-bookworm' } },
    {
      name: "its own image over the gate file's",
      gate: gate({ ...npm, image: 'python:3.12' }, { image: 'node:24-bookworm' }),
      expected: { ...fromGateFile(gate(npm))!, image: 'python:3.12' },
    },
    {
      name: 'every field',
      gate: gate({ ...npm, egress: ['mirror.example.org'], cache: ['/tmp/home/.npm'], env: { CI: '1' }, timeout: '1h' }),
      expected: { ...fromGateFile(gate(npm))!, egress: ['mirror.example.org'], cache: ['/tmp/home/.npm'], env: { CI: '1' }, timeoutMs: 3_600_000 },
    },
    {
      name: 'a Dockerfile at the root: the root is its context, and it keys the environment',
      gate: gate({ ...npm, dockerfile: 'Dockerfile' }),
      expected: {
        ...fromGateFile(gate(npm))!,
        image: undefined,
        dockerfile: { path: 'Dockerfile', context: '.', args: {} },
        inputs: ['package.json', 'package-lock.json', 'Dockerfile'],
      },
    },
    {
      name: 'a Dockerfile in a directory input: its directory is its context, no input added',
      gate: gate({ setup: [], inputs: ['docker'], dockerfile: 'docker/ci/Dockerfile', args: { NODE: '24' } }),
      expected: {
        source: 'gate-file',
        file: gateFilePath,
        dockerfile: { path: 'docker/ci/Dockerfile', context: 'docker/ci', args: { NODE: '24' } },
        setup: [],
        inputs: ['docker'],
        cache: [],
        env: {},
        timeoutMs: 1_200_000,
      },
    },
  ];
  for (const { name, gate: file, expected } of table) {
    it(name, () => assert.deepEqual(fromGateFile(file), expected && JSON.parse(JSON.stringify(expected))));
  }
});

const base: EnvironmentDeclaration = {
  source: 'gate-file',
  file: gateFilePath,
  image: 'node:24-bookworm',
  setup: ['npm ci', 'npm run prepare'],
  inputs: ['package.json', 'package-lock.json', 'vendor'],
  egress: ['mirror.example.org', '*.example.com'],
  cache: ['/tmp/home/.npm', '/tmp/home/.cache'],
  env: { CI: '1', NODE_ENV: 'test' },
  timeoutMs: 1_200_000,
};
const imageId = `sha256:${'a'.repeat(64)}`;
const read: EnvironmentKeyInput[] = [
  { path: 'package.json', oid: '1'.repeat(40), mode: '100644' },
  { path: 'package-lock.json', oid: '2'.repeat(40), mode: '100644' },
  { path: 'vendor/a.js', oid: '3'.repeat(40), mode: '100644' },
  { path: 'vendor/b.sh', oid: '4'.repeat(40), mode: '100755' },
];
const keyOf = (declaration: EnvironmentDeclaration, inputs = read, baseImageId = imageId) => environmentKeyText({ declaration, baseImageId, inputs });
const withInput = (index: number, entry: EnvironmentKeyInput) => read.map((input, at) => (at === index ? entry : input));

describe('environmentKeyText', () => {
  const reference = keyOf(base);
  const changes: { name: string; key: string }[] = [
    { name: 'an input blob', key: keyOf(base, withInput(1, { path: 'package-lock.json', oid: '9'.repeat(40), mode: '100644' })) },
    { name: "an input's mode", key: keyOf(base, withInput(3, { path: 'vendor/b.sh', oid: '4'.repeat(40), mode: '100644' })) },
    { name: 'an input going absent', key: keyOf(base, withInput(0, { path: 'package.json', absent: true })) },
    { name: 'a file added under a directory input', key: keyOf(base, [...read, { path: 'vendor/c.js', oid: '5'.repeat(40), mode: '100644' }]) },
    { name: 'another absent input declared', key: keyOf({ ...base, inputs: [...base.inputs, 'yarn.lock'] }, [...read, { path: 'yarn.lock', absent: true }]) },
    { name: "the base image's ID", key: keyOf(base, read, `sha256:${'b'.repeat(64)}`) },
    { name: 'a setup line', key: keyOf({ ...base, setup: ['npm ci --ignore-scripts', 'npm run prepare'] }) },
    { name: 'the order of the setup lines', key: keyOf({ ...base, setup: [...base.setup].reverse() }) },
    { name: 'a setup line added', key: keyOf({ ...base, setup: [...base.setup, 'true'] }) },
    { name: 'an env value', key: keyOf({ ...base, env: { ...base.env, CI: 'true' } }) },
    { name: 'an env variable added', key: keyOf({ ...base, env: { ...base.env, LANG: 'C.UTF-8' } }) },
    { name: 'an egress host', key: keyOf({ ...base, egress: ['mirror.example.org'] }) },
    { name: 'egress from absent to empty', key: keyOf({ ...base, egress: [] }) },
    { name: 'egress absent', key: keyOf({ ...base, egress: undefined }) },
    { name: 'a cache path', key: keyOf({ ...base, cache: ['/tmp/home/.npm'] }) },
    { name: 'the remote user', key: keyOf({ ...base, remoteUser: 'node' }) },
    { name: 'a Dockerfile instead of an image', key: keyOf({ ...base, image: undefined, dockerfile: { path: 'vendor/Dockerfile', context: '.', args: {} } }) },
  ];
  const dockerfile: EnvironmentDeclaration = { ...base, image: undefined, dockerfile: { path: 'vendor/Dockerfile', context: '.', args: { NODE: '24' } } };
  changes.push(
    { name: "a Dockerfile's build arg", key: keyOf({ ...dockerfile, dockerfile: { ...dockerfile.dockerfile!, args: { NODE: '22' } } }) },
    { name: "a Dockerfile's context", key: keyOf({ ...dockerfile, dockerfile: { ...dockerfile.dockerfile!, context: 'vendor' } }) },
  );
  for (const { name, key } of changes) it(`changes with ${name}`, () => assert.notEqual(key, reference));
  it('every change above is a different environment from every other', () => assert.equal(new Set(changes.map(({ key }) => key)).size, changes.length));

  const same: { name: string; key: string }[] = [
    { name: 'the inputs read in another order', key: keyOf(base, [...read].reverse()) },
    { name: 'the declared inputs in another order', key: keyOf({ ...base, inputs: [...base.inputs].reverse() }) },
    { name: "env's keys in another order", key: keyOf({ ...base, env: { NODE_ENV: 'test', CI: '1' } }) },
    { name: 'egress and cache in another order', key: keyOf({ ...base, egress: [...base.egress!].reverse(), cache: [...base.cache].reverse() }) },
    { name: 'the declaration in the devcontainer instead', key: keyOf({ ...base, source: 'devcontainer', file: '.devcontainer/devcontainer.json' }) },
    { name: 'another tag of the same image ID', key: keyOf({ ...base, image: 'node:24' }) },
    { name: 'a longer timeout', key: keyOf({ ...base, timeoutMs: 3_600_000 }) },
    { name: 'an input read twice (a file inside a directory input)', key: keyOf(base, [...read, read[2]!]) },
    {
      name: 'extra fields on what was read',
      key: keyOf(
        base,
        read.map((input) => ({ ...input, size: 12 })),
      ),
    },
  ];
  for (const { name, key } of same) it(`stays with ${name}`, () => assert.equal(key, reference));

  it('starts with its version and holds the inputs sorted by path', () => {
    const parsed = JSON.parse(reference);
    assert.equal(parsed.version, environmentKeyVersion);
    assert.equal(environmentKeyVersion, 'environment-key-1');
    assert.deepEqual(
      parsed.inputs.map((input: { path: string }) => input.path),
      ['package-lock.json', 'package.json', 'vendor/a.js', 'vendor/b.sh'],
    );
  });

  const mistakes: { name: string; inputs: EnvironmentKeyInput[]; message: RegExp }[] = [
    {
      name: 'a path no input declares',
      inputs: [...read, { path: 'src/index.js', oid: '6'.repeat(40), mode: '100644' }],
      message: /"src\/index\.js" is not under any declared input/,
    },
    { name: 'a declared input left out', inputs: read.slice(1), message: /declared input "package\.json" was not read/ },
    { name: 'one path read two ways', inputs: [...read, { path: 'package.json', absent: true }], message: /"package\.json" was read two ways/ },
  ];
  for (const { name, inputs, message } of mistakes)
    it(`throws on ${name}: a caller's bug would key wrongly`, () => assert.throws(() => keyOf(base, inputs), message));

  it('is the same for the same environment declared in the gate file or the devcontainer', () => {
    const fromGate = fromGateFile(
      gate({ image: 'node:24-bookworm', setup: ['npm ci', 'npm test'], inputs: ['package-lock.json'], env: { CI: '1' }, egress: ['mirror.example.org'] }),
    )!;
    const fromDevcontainer = parseDevcontainer(
      JSON.stringify({
        image: 'node:24-bookworm',
        onCreateCommand: ['npm', 'ci'],
        postCreateCommand: 'npm test',
        containerEnv: { CI: '1' },
        customizations: { tarmac: { inputs: ['package-lock.json'], egress: ['mirror.example.org'] } },
      }),
    );
    assert.ok(fromDevcontainer.ok);
    const lock: EnvironmentKeyInput[] = [{ path: 'package-lock.json', oid: '7'.repeat(40), mode: '100644' }];
    assert.equal(keyOf(fromDevcontainer.declaration, lock), keyOf(fromGate, lock));
  });
});

describe('declarationDigestText', () => {
  it('is canonical: the same declaration written in another key order is the same text', () => {
    const reordered = Object.fromEntries(Object.entries(base).reverse()) as unknown as EnvironmentDeclaration;
    assert.equal(declarationDigestText(reordered), declarationDigestText(base));
  });
  it('records where the declaration came from', () => {
    assert.notEqual(declarationDigestText({ ...base, source: 'devcontainer', file: '.devcontainer/devcontainer.json' }), declarationDigestText(base));
    assert.match(declarationDigestText(base), /"file":".config\/tarmac\/land-gate.json"/);
  });
});

describe('canonicalJson', () => {
  const table: { name: string; value: unknown; expected: string }[] = [
    { name: 'keys sorted at every depth', value: { b: 1, a: { d: [{ z: 1, y: 2 }], c: null } }, expected: '{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}' },
    { name: 'undefined members left out', value: { a: undefined, b: 'x' }, expected: '{"b":"x"}' },
    { name: 'number-like keys sorted as text, not first', value: { b: 1, 10: 2, 9: 3 }, expected: '{"10":2,"9":3,"b":1}' },
    { name: 'strings escaped as JSON does', value: ['a"b', 'é', '\n'], expected: '["a\\"b","é","\\n"]' },
  ];
  for (const { name, value, expected } of table) it(name, () => assert.equal(canonicalJson(value), expected));
  it('refuses what JSON cannot say the same way twice', () => {
    assert.throws(() => canonicalJson({ a: Number.NaN }), /cannot write NaN/);
    assert.throws(() => canonicalJson([undefined]), /cannot write undefined/);
  });
});
