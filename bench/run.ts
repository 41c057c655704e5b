/**
 * `npm run bench [count]`: a two-branch landing with a trivial gate, measured on the
 * real stack side by side with the same steps done by a bare shell script
 * (bench/bare-landing.sh: mirror, workspace, rebase with rerere off, gate container at
 * the exact tree, fast-forward push, cleanup). Prints both medians and the ratio, and
 * the median of each Tarmac step. Measures; asserts nothing.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFixtureRepo, gateFile } from '../infra/fixture-repo';
import { startStack } from '../test/helpers/stack';

interface Step {
  name: string;
  startedAt: string;
  endedAt?: string;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

function fixture(index: number) {
  return createFixtureRepo({
    base: { 'Makefile': 'test:\n\ttrue\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'] }]) },
    branches: [
      { name: `feature/a-${index}`, commits: [{ message: 'a', files: { 'a.txt': `${index}\n` } }] },
      { name: `feature/b-${index}`, commits: [{ message: 'b', files: { 'b.txt': `${index}\n` } }] },
    ],
  });
}

async function main(count: number): Promise<void> {
  const stackStarted = Date.now();
  const stack = await startStack();
  const stackStartMs = Date.now() - stackStarted;
  const tarmacMs: number[] = [];
  const shellMs: number[] = [];
  const steps: Record<string, number[]> = {};
  try {
    // One warm-up of each, not measured: the first container start and git calls pay for cold caches.
    for (let index = -1; index < count; index += 1) {
      const repo = fixture(index + 100);
      const branches = [`feature/a-${index + 100}`, `feature/b-${index + 100}`];
      const begin = Date.now();
      const created: { body: { id: string } } = await stack.api('POST', '/v1/landings', { repo: repo.url, branches, target: 'main' });
      // Wait on the workflow result itself: polling the API would add up to a poll interval.
      await stack.client.workflow.getHandle(created.body.id).result();
      const elapsed = Date.now() - begin;
      const view: { body: { steps: Step[]; outcome?: { status: string } } } = await stack.api('GET', `/v1/landings/${created.body.id}`);
      if (view.body.outcome?.status !== 'landed') throw new Error(`bench landing did not land: ${JSON.stringify(view.body.outcome)}`);
      const shellRepo = fixture(index + 200);
      const shellBegin = Date.now();
      execFileSync('bash', [join(__dirname, 'bare-landing.sh'), shellRepo.url, mkdtempSync(join(tmpdir(), 'tarmac-bare-')), 'main', `feature/a-${index + 200}`, `feature/b-${index + 200}`]);
      const shellElapsed = Date.now() - shellBegin;
      if (index < 0) continue;
      tarmacMs.push(elapsed);
      shellMs.push(shellElapsed);
      for (const step of view.body.steps) {
        if (step.endedAt) (steps[step.name] ??= []).push(Date.parse(step.endedAt) - Date.parse(step.startedAt));
      }
    }
  } finally {
    await stack.stop();
  }
  const report = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
    count,
    stackStartMs,
    tarmacMedianMs: median(tarmacMs),
    shellMedianMs: median(shellMs),
    ratio: Number((median(tarmacMs) / Math.max(1, median(shellMs))).toFixed(2)),
    tarmacMs,
    shellMs,
    stepMedianMs: Object.fromEntries(Object.entries(steps).map(([name, values]) => [name, median(values)])),
  };
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  writeFileSync(join(__dirname, 'results', `landing-${Date.now()}.json`), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

main(Number(process.argv[2] ?? 5)).catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
