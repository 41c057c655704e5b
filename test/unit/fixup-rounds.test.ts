import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fixupRoundsAllowed } from '../../policies/fixup-rounds';

describe('fixupRoundsAllowed: the gate file decides, the recipe is the default', () => {
  const table: { name: string; gateFile: number | undefined; recipe: number | undefined; expected: number }[] = [
    { name: 'the gate file says 2, the recipe 1: the gate file', gateFile: 2, recipe: 1, expected: 2 },
    { name: 'the gate file says 0 (no fixup), the recipe 3: none', gateFile: 0, recipe: 3, expected: 0 },
    { name: 'the gate file is silent: the recipe', gateFile: undefined, recipe: 3, expected: 3 },
    { name: 'the gate file is silent, the recipe says 0: none', gateFile: undefined, recipe: 0, expected: 0 },
    { name: 'a run without recipes (started before snapshots), gate file silent: 1 as before', gateFile: undefined, recipe: undefined, expected: 1 },
    { name: 'a run without recipes, the gate file says 2: 2', gateFile: 2, recipe: undefined, expected: 2 },
  ];
  for (const { name, gateFile, recipe, expected } of table) {
    it(name, () => assert.equal(fixupRoundsAllowed(gateFile, recipe), expected));
  }
});
