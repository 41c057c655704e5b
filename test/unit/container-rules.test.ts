import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkNetwork, containerName, dockerNamePattern } from '../../core/node/container-rules';

describe('containerName: one deterministic Docker name per (run, step)', () => {
  const table = [
    {
      name: 'a gate step',
      run: 'landing.repo.main.abc123',
      step: 'gate-test-0123456789ab-r1',
      readable: /^tarmac-landing\.repo\.main\.abc123-gate-test-0123456789ab-r1-[0-9a-f]{16}$/,
    },
    { name: 'a session attempt', run: 'session-test.1a2b', step: 'session-s-1a2b-a2', readable: /^tarmac-session-test\.1a2b-session-s-1a2b-a2-[0-9a-f]{16}$/ },
    { name: 'characters outside the rule become _', run: 'run/with spaces#x', step: 'step:1', readable: /^tarmac-run_with_spaces_x-step_1-[0-9a-f]{16}$/ },
    { name: 'a very long step is cut and hashed', run: 'r', step: 'x'.repeat(500), readable: /^tarmac-r-x{91}-[0-9a-f]{16}$/ },
  ];
  for (const { name, run, step, readable } of table) {
    it(name, () => {
      const result = containerName(run, step);
      assert.match(result, readable);
      assert.match(result, dockerNamePattern, 'valid for Docker');
      assert.ok(result.length <= 117, `bounded length (${result.length})`);
      assert.equal(containerName(run, step), result, 'the same pair gives the same name (a retry meets the first attempt)');
    });
  }

  const distinct = [
    { name: 'pairs that clean up to the same text', a: ['a/b', 's'], b: ['a_b', 's'] },
    { name: 'the same text split differently between run and step', a: ['run-x', 'y'], b: ['run', 'x-y'] },
    { name: 'another attempt', a: ['r', 'session-s-a1'], b: ['r', 'session-s-a2'] },
    { name: 'long steps that differ only past the cut', a: ['r', `${'x'.repeat(200)}1`], b: ['r', `${'x'.repeat(200)}2`] },
  ];
  for (const { name, a, b } of distinct) {
    it(`different names: ${name}`, () => assert.notEqual(containerName(a[0]!, a[1]!), containerName(b[0]!, b[1]!)));
  }
});

describe('checkNetwork: agent and gate containers get network none only', () => {
  const table = [
    { name: 'default (unset) is none', role: 'reviewer', mode: undefined, ok: true },
    { name: 'none for a fixer', role: 'fixer', mode: 'none', ok: true },
    { name: 'none for a gate', role: 'gate', mode: 'none', ok: true },
    { name: 'host for a fixer', role: 'fixer', mode: 'host', ok: false },
    { name: 'host for a gate', role: 'gate', mode: 'host', ok: false },
    { name: 'bridge for a reviewer', role: 'reviewer', mode: 'bridge', ok: false },
    { name: 'another container’s namespace', role: 'implementer', mode: 'container:temporal', ok: false },
    { name: 'host without a role label', role: undefined, mode: 'host', ok: false },
  ];
  for (const { name, role, mode, ok } of table) {
    it(name, () => {
      const check = checkNetwork(role, mode);
      assert.equal(check.ok, ok);
      if (!check.ok) assert.match(check.message, new RegExp(`network "${mode}" refused.*"none" only`));
    });
  }
});
