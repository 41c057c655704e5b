/**
 * `npm run chaos [-- --scale N] [--seed N] [--random-kills N] [--max-ratio X]`: the chaos suite
 * (test/chaos/chaos.test.ts) on a stack of its own. The test run has it at scale 1 (every flow once,
 * a few minutes); a larger scale runs N of each flow at once, with N random kills. The flags are
 * the suite's TARMAC_CHAOS_* variables (test/README.md); the report goes to the output and to
 * bench/results/chaos-<time>.json.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const flags: Record<string, { variable: string; valid: (value: string) => boolean; what: string }> = {
  '--scale': { variable: 'TARMAC_CHAOS_SCALE', valid: (value) => /^[1-9]\d*$/.test(value), what: 'a whole number ≥ 1' },
  '--seed': { variable: 'TARMAC_CHAOS_SEED', valid: (value) => /^\d+$/.test(value), what: 'a whole number' },
  '--random-kills': { variable: 'TARMAC_CHAOS_RANDOM_KILLS', valid: (value) => /^\d+$/.test(value), what: 'a whole number' },
  '--max-ratio': { variable: 'TARMAC_CHAOS_MAX_RATIO', valid: (value) => Number(value) > 1, what: 'a number over 1' },
};

function main(argv: string[]): number {
  const env: Record<string, string> = {};
  for (let index = 0; index < argv.length; index += 1) {
    const [name, inline] = argv[index]!.split('=', 2) as [string, string | undefined];
    const flag = flags[name];
    if (!flag) {
      process.stderr.write(`chaos: unknown argument ${argv[index]} (known: ${Object.keys(flags).join(', ')})\n`);
      return 2;
    }
    const value = inline ?? argv[++index];
    if (value === undefined || !flag.valid(value)) {
      process.stderr.write(`chaos: ${name} needs ${flag.what}\n`);
      return 2;
    }
    env[flag.variable] = value;
  }
  const test = join(__dirname, '..', 'test', 'chaos', 'chaos.test.ts');
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', test], { stdio: 'inherit', env: { ...process.env, ...env } });
  return run.status ?? 1;
}

process.exit(main(process.argv.slice(2)));
