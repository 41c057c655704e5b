/**
 * `npm run bench [count] [ratio|throughput|history|queue …] [--landings n] [--batch-size n]
 * [--repeats n]` — measurements on the real stack (one Temporal dev server, one worker, the API,
 * Docker), printed as JSON and kept in bench/results/. Measures; asserts nothing but that the
 * landings it times did land. A section that fails is reported under `errors` and the others
 * still run; the exit code is then 1.
 *
 * - ratio (bench/ratio.ts): a two-branch landing against the same steps in a bare shell script,
 *   `count` times (default 5) after one warm-up.
 * - throughput (bench/throughput.ts): `--landings` (default 20) two-branch landings at once.
 * - history (bench/history.ts): the largest workflow history of a landing with a fixup round and
 *   a review panel, against ≤ 1,000 events and no payload over 64 KiB.
 * - queue (bench/queue.ts): `--landings` (default 8) one-commit landings at once to one target,
 *   batch size 1 against `--batch-size` (default 4), `--repeats` times (default 2).
 * - environment (bench/environment.ts): a landing with a repository environment the host has
 *   against the same landing on the runner image, `count` times; and cold builds (a new key each).
 *
 * With no section named, all five run, in that order, on one stack: the ratio first, so what
 * it measures is the same as when it ran alone. Through npm, flags need `--`
 * (`npm run bench -- --landings 10`); section names do not (`npm run bench throughput`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { startStack } from '../test/helpers/stack';
import { defaultLandings, parseArguments, type Options, type Section } from './arguments';
import { measureHistory, type HistoryReport } from './history';
import { measureRatio, type RatioReport } from './ratio';
import { measureQueue, type QueueReport } from './queue';
import { measureThroughput, type ThroughputReport } from './throughput';
import { measureEnvironment, type EnvironmentReport } from './environment';
import { npmRegistry } from '../test/helpers/registries';

interface Report extends Partial<RatioReport> {
  date: string;
  machine: { cpus: number; model: string | undefined; node: string };
  stackStartMs: number;
  throughput?: ThroughputReport;
  history?: HistoryReport;
  queue?: QueueReport;
  environment?: EnvironmentReport;
  /** Sections that failed (e.g. a landing that did not land), with why. */
  errors?: Partial<Record<Section, string>>;
}

/** Runs one section; a failure is recorded in the report instead of losing the other sections' figures. */
async function section<T>(report: Report, name: Section, measure: () => Promise<T>): Promise<T | undefined> {
  try {
    return await measure();
  } catch (error) {
    (report.errors ??= {})[name] = error instanceof Error ? error.message : String(error);
    return undefined;
  }
}

async function main(options: Options): Promise<number> {
  const stackStarted = Date.now();
  // The worker's warm gate pool as a deployment has it (default 1; TARMAC_GATE_POOL=0 npm run bench measures without it).
  const gatePool = process.env.TARMAC_GATE_POOL?.trim() || '1';
  // The environment section's setups reach the registry the machine's npm names (as an operator would allow it).
  const stack = await startStack({ workerEnv: { TARMAC_GATE_POOL: gatePool, TARMAC_EGRESS_ALLOW: npmRegistry().host } });
  const report: Report = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
    stackStartMs: Date.now() - stackStarted,
  };
  try {
    // The ratio's figures stay at the top level, where they have always been.
    if (options.only.has('ratio')) Object.assign(report, await section(report, 'ratio', () => measureRatio(stack, options.count, Number(gatePool))));
    if (options.only.has('throughput'))
      report.throughput = await section(report, 'throughput', () => measureThroughput(stack, options.landings ?? defaultLandings.throughput));
    if (options.only.has('history')) report.history = await section(report, 'history', () => measureHistory(stack));
    if (options.only.has('queue')) {
      const queue = { landings: options.landings ?? defaultLandings.queue, batchSize: options.batchSize, repeats: options.repeats };
      report.queue = await section(report, 'queue', () => measureQueue(stack, queue));
    }
    if (options.only.has('environment'))
      report.environment = await section(report, 'environment', () => measureEnvironment(stack, options.count, Number(gatePool)));
  } finally {
    await stack.stop();
  }
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  writeFileSync(join(__dirname, 'results', `landing-${Date.now()}.json`), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (report.errors)
    process.stderr.write(
      `bench: failed sections: ${Object.entries(report.errors)
        .map(([name, why]) => `${name}: ${why}`)
        .join('; ')}\n`,
    );
  return report.errors ? 1 : 0;
}

Promise.resolve()
  .then(() => main(parseArguments(process.argv.slice(2))))
  .then((code) => process.exit(code))
  .catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
