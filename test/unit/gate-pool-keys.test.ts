import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { warmEnvironmentKeys } from '../../policies/gate-pool-keys';

const table: { name: string; input: { keys: string[]; used: string; bound: number }; expected: { keys: string[]; dropped: string[] } }[] = [
  { name: 'the first key used gets a container', input: { keys: [], used: 'A', bound: 2 }, expected: { keys: ['A'], dropped: [] } },
  { name: 'a second key joins, most recent first', input: { keys: ['A'], used: 'B', bound: 2 }, expected: { keys: ['B', 'A'], dropped: [] } },
  {
    name: 'a key used again moves to the front, nothing is dropped',
    input: { keys: ['B', 'A'], used: 'A', bound: 2 },
    expected: { keys: ['A', 'B'], dropped: [] },
  },
  { name: 'the most recent key already in front: unchanged', input: { keys: ['A', 'B'], used: 'A', bound: 2 }, expected: { keys: ['A', 'B'], dropped: [] } },
  {
    name: 'a third key past the bound drops the least recently used',
    input: { keys: ['B', 'A'], used: 'C', bound: 2 },
    expected: { keys: ['C', 'B'], dropped: ['A'] },
  },
  { name: 'a bound of one keeps only the key just used', input: { keys: ['A'], used: 'B', bound: 1 }, expected: { keys: ['B'], dropped: ['A'] } },
  { name: 'a bound of zero keeps none (the setting turned off)', input: { keys: [], used: 'A', bound: 0 }, expected: { keys: [], dropped: ['A'] } },
  {
    name: 'a lowered bound drops every key past it at the next use',
    input: { keys: ['A', 'B', 'C'], used: 'D', bound: 2 },
    expected: { keys: ['D', 'A'], dropped: ['B', 'C'] },
  },
];

describe('warmEnvironmentKeys: the environments the gate pool keeps a container for, most recently used, bounded', () => {
  for (const { name, input, expected } of table) {
    it(name, () => {
      assert.deepEqual(warmEnvironmentKeys(input), expected);
    });
  }
});
