import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { goScript } from '../../activities/containers/gate-pool';

/**
 * The go file of a pooled gate container (activities/containers/gate-pool.ts): the suite's environment and argv
 * come from the gate file (attacker input) and must reach the suite exactly, as data, never as shell.
 */
describe('goScript: the suite environment and argv, exactly, whatever they hold', () => {
  const values = ['plain', "it's", '$HOME `id` $(id)', 'a\nnewline', "'; touch /tmp/pwned; '", '', '\\', '"double"', '*'];

  for (const value of values) {
    it(`passes ${JSON.stringify(value)} through unchanged, as a value and as an argument`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'tarmac-go-'));
      const go = join(dir, 'go');
      writeFileSync(
        go,
        goScript([`TARMAC_VALUE=${value}`, 'CI=1'], ['bash', '-c', 'printf "%s\\0" "$TARMAC_VALUE" "$CI" "$@"', 'argv0', value, 'two words']).replace(
          'cd /workspace || exit 1',
          `cd ${JSON.stringify(dir)} || exit 1`,
        ),
      );
      // The wait sources the go file with bash's `.`; the same here.
      const out = execFileSync('bash', ['-c', `. ${JSON.stringify(go)}`], { cwd: dir }).toString();
      assert.deepEqual(out.split('\0').slice(0, -1), [value, '1', value, 'two words']);
    });
  }

  it('refuses an environment entry without a valid name (it would be shell)', () => {
    assert.throws(() => goScript(['A;touch x=1'], ['true']), /no valid name/);
    assert.throws(() => goScript(['=1'], ['true']), /no valid name/);
  });

  it('ends with the exec of the suite in /workspace: the wait is replaced, not left behind', () => {
    assert.match(goScript(['CI=1'], ['make', 'test']), /\ncd \/workspace \|\| exit 1\nexec 'make' 'test'\n$/);
  });
});
