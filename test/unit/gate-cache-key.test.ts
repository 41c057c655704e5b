import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  gateCachePath,
  sameGateKey,
  sealDecision,
  suiteDefinitionText,
  type GateCacheKey,
  type GateSuiteDefinition,
  type SuiteRunFacts,
} from '../../policies/gate-cache-key';

const tree = 'a'.repeat(40);
const image = `sha256:${'1'.repeat(64)}`;
const rebuilt = `sha256:${'2'.repeat(64)}`;
const digest = `sha256:${'3'.repeat(64)}`;
const key = (overrides: Partial<GateCacheKey> = {}): GateCacheKey => ({ treeSha: tree, suiteId: 'test', suiteDigest: digest, imageId: image, ...overrides });
const definition = (overrides: Partial<GateSuiteDefinition> = {}): GateSuiteDefinition => ({
  suite: { id: 'test', run: ['npm', 'test'], timeout: '5m' },
  timeoutMs: 300_000,
  env: ['HOME=/tmp', 'CI=1', 'TARMAC_SUITE=test'],
  sandbox: 'gate-sandbox-1',
  ...overrides,
});

describe('gate cache key: the same tree, suite definition and runner image — anything else is another entry', () => {
  const table: { name: string; other: GateCacheKey; same: boolean }[] = [
    { name: 'the same key', other: key(), same: true },
    { name: 'another tree', other: key({ treeSha: 'b'.repeat(40) }), same: false },
    { name: 'another suite', other: key({ suiteId: 'lint' }), same: false },
    { name: 'another suite definition', other: key({ suiteDigest: `sha256:${'4'.repeat(64)}` }), same: false },
    { name: 'the image rebuilt under the same tag (another image ID)', other: key({ imageId: rebuilt }), same: false },
  ];
  for (const { name, other, same } of table) {
    it(name, () => {
      assert.equal(sameGateKey(key(), other), same);
      assert.equal(gateCachePath(key()) === gateCachePath(other), same, 'one path per key');
    });
  }

  it('the path: tree fan-out, tree, suite, then both digests', () => {
    assert.equal(gateCachePath(key()), `aa/${tree}/test/${'3'.repeat(64)}-${'1'.repeat(64)}`);
    assert.equal(gateCachePath(key({ treeSha: 'c'.repeat(64) })).split('/')[1], 'c'.repeat(64), 'SHA-256 repositories too');
  });

  const invalid: { name: string; bad: Partial<GateCacheKey>; field: RegExp }[] = [
    { name: 'a tree that is not a SHA', bad: { treeSha: '../../etc' }, field: /treeSha/ },
    { name: 'a short tree', bad: { treeSha: 'abc123' }, field: /treeSha/ },
    { name: 'an image tag instead of its ID', bad: { imageId: 'tarmac/runner:bookworm' }, field: /imageId/ },
    { name: 'a suite digest that is not sha256', bad: { suiteDigest: 'md5:abc' }, field: /suiteDigest/ },
  ];
  for (const { name, bad, field } of invalid) {
    it(`refused: ${name}`, () => assert.throws(() => gateCachePath(key(bad)), field));
  }

  it('a suite id cannot leave its directory', () => {
    for (const suiteId of ['../x', '..', 'a/b', '.hidden']) {
      const path = gateCachePath(key({ suiteId }));
      const segment = path.split('/')[2]!;
      assert.ok(!segment.includes('/') && !segment.startsWith('.'), `${suiteId} → ${segment}`);
      assert.equal(path.split('/').length, 4, path);
    }
  });
});

describe('suite definition text: what decides what runs', () => {
  const table: { name: string; other: GateSuiteDefinition; same: boolean }[] = [
    { name: 'the same definition', other: definition(), same: true },
    {
      name: 'the same suite written with its keys in another order',
      other: definition({ suite: { timeout: '5m', run: ['npm', 'test'], id: 'test' } }),
      same: true,
    },
    { name: 'another argv', other: definition({ suite: { id: 'test', run: ['npm', 'run', 'test'], timeout: '5m' } }), same: false },
    { name: 'the argv in another order', other: definition({ suite: { id: 'test', run: ['test', 'npm'], timeout: '5m' } }), same: false },
    { name: 'another timeout', other: definition({ suite: { id: 'test', run: ['npm', 'test'], timeout: '10m' }, timeoutMs: 600_000 }), same: false },
    {
      name: 'a field the gate file adds later',
      other: definition({ suite: { id: 'test', run: ['npm', 'test'], timeout: '5m', env: { A: '1' } } }),
      same: false,
    },
    { name: 'another environment', other: definition({ env: ['HOME=/tmp', 'CI=0', 'TARMAC_SUITE=test'] }), same: false },
    { name: 'another sandbox version', other: definition({ sandbox: 'gate-sandbox-2' }), same: false },
  ];
  for (const { name, other, same } of table) {
    it(name, () => assert.equal(suiteDefinitionText(definition()) === suiteDefinitionText(other), same));
  }
});

describe('which results are sealed', () => {
  const facts = (overrides: Partial<SuiteRunFacts>): SuiteRunFacts => ({ status: 'passed', oomKilled: false, logKept: true, ...overrides });
  const table: { name: string; facts: SuiteRunFacts; seal: boolean; reason?: RegExp }[] = [
    { name: 'passed', facts: facts({}), seal: true },
    { name: 'failed (a red verdict on the tree)', facts: facts({ status: 'failed' }), seal: true },
    { name: 'timed out', facts: facts({ status: 'timed-out' }), seal: false, reason: /timed out/ },
    { name: 'killed for memory', facts: facts({ status: 'failed', oomKilled: true }), seal: false, reason: /memory/ },
    { name: 'its log could not be read', facts: facts({ logKept: false }), seal: false, reason: /log/ },
  ];
  for (const { name, facts: given, seal, reason } of table) {
    it(name, () => {
      const decision = sealDecision(given);
      assert.equal(decision.seal, seal);
      if (!decision.seal) assert.match(decision.reason, reason!);
    });
  }
});
