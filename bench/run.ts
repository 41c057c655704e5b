/**
 * `npm run bench [count]`: lands `count` branches (default 5) one after another on the
 * real stack and reports wall time per landing and per step. Measures; asserts nothing.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createFixtureRepo, gateFile } from '../infra/fixture-repo';
import { startStack, waitFor } from '../test/helpers/stack';

interface Step {
  name: string;
  startedAt: string;
  endedAt?: string;
}

async function main(count: number): Promise<void> {
  const started = Date.now();
  const stack = await startStack();
  const stackMs = Date.now() - started;
  const landings: { totalMs: number; steps: Record<string, number> }[] = [];
  try {
    for (let index = 0; index < count; index += 1) {
      const repo = createFixtureRepo({
        base: { 'Makefile': 'test:\n\ttrue\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'] }]) },
        branches: [{ name: `feature/bench-${index}`, commits: [{ message: 'bench', files: { 'x.txt': `${index}\n` } }] }],
      });
      const begin = Date.now();
      const created: { body: { id: string } } = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: [`feature/bench-${index}`], target: 'main' });
      const view = await waitFor(
        async (): Promise<{ body: { workflowStatus: string; steps: Step[] } }> => stack.api('GET', `/v1/landings/${created.body.id}`),
        (response) => response.body.workflowStatus === 'COMPLETED',
        120_000,
      );
      const steps: Record<string, number> = {};
      for (const step of view.body.steps) {
        if (step.endedAt) steps[step.name] = Date.parse(step.endedAt) - Date.parse(step.startedAt);
      }
      landings.push({ totalMs: Date.now() - begin, steps });
    }
  } finally {
    await stack.stop();
  }
  const totals = landings.map((landing) => landing.totalMs).sort((a, b) => a - b);
  const median = totals[Math.floor(totals.length / 2)] ?? 0;
  const stepNames = Object.keys(landings[0]?.steps ?? {});
  const stepMedians = Object.fromEntries(
    stepNames.map((name) => {
      const values = landings.map((landing) => landing.steps[name] ?? 0).sort((a, b) => a - b);
      return [name, values[Math.floor(values.length / 2)] ?? 0];
    }),
  );
  const report = { date: new Date().toISOString(), count, stackStartMs: stackMs, landingMedianMs: median, landingMs: totals, stepMedianMs: stepMedians };
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  writeFileSync(join(__dirname, 'results', `landing-${Date.now()}.json`), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

main(Number(process.argv[2] ?? 5)).catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
