import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fieldName, parseGateFile } from '../../core/gate-file';

const valid = { version: 1, suites: [{ id: 'test', run: ['make', 'test'], timeout: '10m' }] };
const withSuite = (suite: Record<string, unknown>) => JSON.stringify({ version: 1, suites: [suite] });
const environment = { setup: ['npm ci'], inputs: ['package.json', 'package-lock.json'] };
const withEnvironment = (fields: Record<string, unknown>) => JSON.stringify({ ...valid, environment: { ...environment, ...fields } });
const refused = (field: string, message: RegExp) => ({ ok: false as const, field, message });

const cases: { name: string; input: string; expected: { ok: true } | { ok: false; field: string; message: RegExp } }[] = [
  { name: 'minimal valid file', input: JSON.stringify(valid), expected: { ok: true } },
  {
    name: 'full valid file',
    input: JSON.stringify({ ...valid, image: 'tarmac/runner:bookworm', review: { panel: 'default', quorum: 2 }, fixup: { maxRounds: 1 } }),
    expected: { ok: true },
  },
  { name: 'not JSON', input: '{ version: 1', expected: { ok: false, field: '(root)', message: /not valid JSON/ } },
  { name: 'not an object', input: '[]', expected: { ok: false, field: '(root)', message: /object/ } },
  { name: 'wrong version', input: JSON.stringify({ ...valid, version: 2 }), expected: { ok: false, field: 'version', message: /1/ } },
  { name: 'missing suites', input: JSON.stringify({ version: 1 }), expected: { ok: false, field: 'suites', message: /required/ } },
  { name: 'no suites', input: JSON.stringify({ version: 1, suites: [] }), expected: { ok: false, field: 'suites', message: /length/ } },
  { name: 'empty argv', input: withSuite({ id: 'a', run: [] }), expected: { ok: false, field: 'suites[0].run', message: /length/ } },
  { name: 'shell string instead of argv', input: withSuite({ id: 'a', run: 'make test' }), expected: { ok: false, field: 'suites[0].run', message: /array/ } },
  { name: 'bad timeout', input: withSuite({ id: 'a', run: ['x'], timeout: '5 min' }), expected: { ok: false, field: 'suites[0].timeout', message: /10m/ } },
  { name: 'bad suite id', input: withSuite({ id: 'Has Space', run: ['x'] }), expected: { ok: false, field: 'suites[0].id', message: /lowercase/ } },
  {
    name: 'unknown suite field',
    input: withSuite({ id: 'a', run: ['x'], cmd: 'y' }),
    expected: { ok: false, field: 'suites[0].cmd', message: /valid fields: id, run, timeout/ },
  },
  { name: 'unknown top-level field', input: JSON.stringify({ ...valid, gates: [] }), expected: { ok: false, field: 'gates', message: /not a known field/ } },
  {
    name: 'duplicate suite ids',
    input: JSON.stringify({
      version: 1,
      suites: [
        { id: 'a', run: ['x'] },
        { id: 'a', run: ['y'] },
      ],
    }),
    expected: { ok: false, field: 'suites[1].id', message: /duplicates/ },
  },
  {
    name: 'quorum below 1',
    input: JSON.stringify({ ...valid, review: { panel: 'p', quorum: 0 } }),
    expected: { ok: false, field: 'review.quorum', message: /1/ },
  },
  {
    name: 'too many fixup rounds',
    input: JSON.stringify({ ...valid, fixup: { maxRounds: 9 } }),
    expected: { ok: false, field: 'fixup.maxRounds', message: /5/ },
  },
];

const environmentCases: typeof cases = [
  { name: 'an environment with setup and inputs', input: withEnvironment({}), expected: { ok: true } },
  { name: 'an environment with no setup commands', input: withEnvironment({ setup: [] }), expected: { ok: true } },
  {
    name: 'an environment with every field',
    input: withEnvironment({
      image: 'node:24-bookworm',
      egress: ['mirror.example.org', '*.example.com'],
      cache: ['/tmp/home/.npm'],
      env: { CI: '1', _X: '' },
      timeout: '30m',
    }),
    expected: { ok: true },
  },
  {
    name: 'a Dockerfile with its context and args',
    input: withEnvironment({ dockerfile: 'docker/Dockerfile', context: '.', args: { NODE: '24' } }),
    expected: { ok: true },
  },
  { name: 'not an object', input: JSON.stringify({ ...valid, environment: [] }), expected: refused('environment', /object/) },
  { name: 'no setup', input: withEnvironment({ setup: undefined }), expected: refused('environment.setup', /required/) },
  { name: 'no inputs', input: withEnvironment({ inputs: undefined }), expected: refused('environment.inputs', /required/) },
  { name: 'empty inputs', input: withEnvironment({ inputs: [] }), expected: refused('environment.inputs', /length.*keys the environment/) },
  {
    name: 'an unknown field',
    input: withEnvironment({ packages: ['x'] }),
    expected: refused('environment.packages', /valid fields: image, dockerfile, context, args, setup, inputs/),
  },
  {
    name: 'an image and a Dockerfile',
    input: withEnvironment({ image: 'node:24', dockerfile: 'Dockerfile' }),
    expected: refused('environment.dockerfile', /not both/),
  },
  { name: 'a context without a Dockerfile', input: withEnvironment({ context: 'docker' }), expected: refused('environment.context', /only to a Dockerfile/) },
  {
    name: 'args without a Dockerfile',
    input: withEnvironment({ image: 'node:24', args: { A: 'b' } }),
    expected: refused('environment.args', /only to a Dockerfile/),
  },
  {
    name: 'a Dockerfile outside the repository',
    input: withEnvironment({ dockerfile: '../Dockerfile' }),
    expected: refused('environment.dockerfile', /"\.\." segment/),
  },
  {
    name: 'a context that is absolute',
    input: withEnvironment({ dockerfile: 'Dockerfile', context: '/srv' }),
    expected: refused('environment.context', /relative/),
  },
  {
    name: 'an image that is not a reference',
    input: withEnvironment({ image: 'node 24' }),
    expected: refused('environment.image', /match '\^\[a-zA-Z0-9\].*base image/),
  },
  { name: '33 setup commands', input: withEnvironment({ setup: Array.from({ length: 33 }, () => 'true') }), expected: refused('environment.setup', /32/) },
  { name: 'a setup command of 4097 characters', input: withEnvironment({ setup: ['x'.repeat(4097)] }), expected: refused('environment.setup[0]', /4096/) },
  { name: 'an empty setup command', input: withEnvironment({ setup: ['npm ci', ''] }), expected: refused('environment.setup[1]', /length/) },
  { name: 'a setup command with a NUL', input: withEnvironment({ setup: ['echo \u0000'] }), expected: refused('environment.setup[0]', /NUL/) },
  { name: 'an argv instead of a command line', input: withEnvironment({ setup: [['npm', 'ci']] }), expected: refused('environment.setup[0]', /string/) },
  {
    name: '65 inputs',
    input: withEnvironment({ inputs: Array.from({ length: 65 }, (_, index) => `f${index}`) }),
    expected: refused('environment.inputs', /64/),
  },
  {
    name: 'an absolute input',
    input: withEnvironment({ inputs: ['/etc/passwd'] }),
    expected: refused('environment.inputs[0]', /relative to the repository root/),
  },
  { name: 'an input with ".."', input: withEnvironment({ inputs: ['a', 'b', 'lib/../../x'] }), expected: refused('environment.inputs[2]', /"\.\." segment/) },
  { name: 'an input with "./"', input: withEnvironment({ inputs: ['./package.json'] }), expected: refused('environment.inputs[0]', /"\." or/) },
  { name: 'an input in .git', input: withEnvironment({ inputs: ['.git/config'] }), expected: refused('environment.inputs[0]', /\.git/) },
  { name: 'an input with a trailing slash', input: withEnvironment({ inputs: ['vendor/'] }), expected: refused('environment.inputs[0]', /empty segment/) },
  { name: 'an input with a doubled slash', input: withEnvironment({ inputs: ['a//b'] }), expected: refused('environment.inputs[0]', /empty segment/) },
  { name: 'a glob input', input: withEnvironment({ inputs: ['**/package.json'] }), expected: refused('environment.inputs[0]', /pattern/) },
  { name: 'an input with a control character', input: withEnvironment({ inputs: ['a\nb'] }), expected: refused('environment.inputs[0]', /control character/) },
  {
    name: 'an input twice',
    input: withEnvironment({ inputs: ['a', 'b', 'a'] }),
    expected: refused('environment.inputs[2]', /repeats environment\.inputs\[0\]/),
  },
  {
    name: 'an input inside another',
    input: withEnvironment({ inputs: ['.devcontainer/Dockerfile', '.devcontainer'] }),
    expected: refused('environment.inputs[0]', /inside environment\.inputs\[1\]/),
  },
  { name: 'an egress URL', input: withEnvironment({ egress: ['https://mirror.example.org'] }), expected: refused('environment.egress[0]', /URL/) },
  { name: 'an egress port', input: withEnvironment({ egress: ['mirror.example.org:8080'] }), expected: refused('environment.egress[0]', /port/) },
  { name: 'an egress IP address', input: withEnvironment({ egress: ['10.0.0.1'] }), expected: refused('environment.egress[0]', /IP address/) },
  {
    name: 'an egress name in capitals',
    input: withEnvironment({ egress: ['Mirror.Example.org'] }),
    expected: refused('environment.egress[0]', /"mirror\.example\.org"/),
  },
  { name: 'an egress wildcard inside a name', input: withEnvironment({ egress: ['a.*.org'] }), expected: refused('environment.egress[0]', /\*/) },
  { name: 'a cache outside /tmp/home/', input: withEnvironment({ cache: ['/root/.npm'] }), expected: refused('environment.cache[0]', /under \/tmp\/home\//) },
  { name: 'the whole home as a cache', input: withEnvironment({ cache: ['/tmp/home/'] }), expected: refused('environment.cache[0]', /under \/tmp\/home\//) },
  { name: 'a cache climbing out', input: withEnvironment({ cache: ['/tmp/home/../etc'] }), expected: refused('environment.cache[0]', /"\.\." segment/) },
  {
    name: 'nine caches',
    input: withEnvironment({ cache: Array.from({ length: 9 }, (_, index) => `/tmp/home/c${index}`) }),
    expected: refused('environment.cache', /8/),
  },
  { name: 'an env name Tarmac keeps', input: withEnvironment({ env: { TARMAC_TOKEN: 'x' } }), expected: refused('environment.env.TARMAC_TOKEN', /TARMAC_/) },
  {
    name: 'a proxy variable',
    input: withEnvironment({ env: { https_proxy: 'http://x' } }),
    expected: refused('environment.env.https_proxy', /egress gateway/),
  },
  { name: 'an env name that is no name', input: withEnvironment({ env: { '1X': 'y' } }), expected: refused('environment.env["1X"]', /not a variable name/) },
  { name: 'an env value of 4097 characters', input: withEnvironment({ env: { X: 'y'.repeat(4097) } }), expected: refused('environment.env.X', /4096/) },
  { name: 'an env value that is a number', input: withEnvironment({ env: { X: 1 } }), expected: refused('environment.env.X', /string/) },
  {
    name: 'a build arg Tarmac keeps',
    input: withEnvironment({ dockerfile: 'Dockerfile', args: { HTTP_PROXY: 'x' } }),
    expected: refused('environment.args.HTTP_PROXY', /egress gateway/),
  },
  { name: 'a timeout in words', input: withEnvironment({ timeout: '20 minutes' }), expected: refused('environment.timeout', /"20m"/) },
  { name: 'a timeout of nothing', input: withEnvironment({ timeout: '0s' }), expected: refused('environment.timeout', /longer than 0/) },
];

describe('parseGateFile', () => {
  for (const { name, input, expected } of [...cases, ...environmentCases]) {
    it(name, () => {
      const result = parseGateFile(input);
      assert.equal(result.ok, expected.ok, JSON.stringify(result));
      if (!result.ok && !expected.ok) {
        assert.equal(result.field, expected.field);
        assert.match(result.message, expected.message);
      }
    });
  }
});

describe('fieldName', () => {
  const table = [
    { input: '/suites/0/run', expected: 'suites[0].run' },
    { input: '/version', expected: 'version' },
    { input: '', expected: '(root)' },
    { input: '/review/quorum', expected: 'review.quorum' },
  ];
  for (const { input, expected } of table) it(`${input || '(empty)'} → ${expected}`, () => assert.equal(fieldName(input), expected));
});
