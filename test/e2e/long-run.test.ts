import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NativeConnection, Worker } from '@temporalio/worker';
import { readEvents } from '../helpers/sse';
import { startStack, testToken, type Stack } from '../helpers/stack';
import type { LongRunInput } from '../fixtures/long-run/workflows';

/**
 * 700 steps (2,100 journal events: two continue-as-new points) in the default run, about a minute;
 * TARMAC_TEST_LONG_RUN=full runs the 2,000 of docs/BENCHMARKS.md and the comparison without it.
 */
const steps = process.env.TARMAC_TEST_LONG_RUN === 'full' ? 2000 : 700;
const taskQueue = 'tarmac-long-run';

/**
 * A synthetic long run on the real stack (dev server, the real API's event stream): `steps` steps,
 * each an activity and three journal events, with the landing's continue-as-new rule and without.
 * Reports each run's history (events, bytes).
 */
describe(`a run of ${steps} steps: continue-as-new keeps each history small and the event stream whole`, () => {
  let stack: Stack;
  let worker: Worker;
  let connection: NativeConnection;
  let running: Promise<void>;
  before(async () => {
    stack = await startStack();
    connection = await NativeConnection.connect({ address: stack.server.address });
    worker = await Worker.create({
      connection,
      taskQueue,
      workflowsPath: join(__dirname, '../fixtures/long-run/workflows.ts'),
      activities: { step: async (index: number) => index },
    });
    running = worker.run();
  });
  after(async () => {
    worker?.shutdown();
    await running;
    await connection?.close();
    await stack?.stop();
  });

  const historyOf = async (id: string) => {
    const runs: { runId: string; status: string; events: number; bytes: number }[] = [];
    for await (const execution of stack.client.workflow.list({ query: `WorkflowId = '${id}'` })) {
      const description = await stack.client.workflow.getHandle(id, execution.runId).describe();
      runs.push({
        runId: execution.runId,
        status: execution.status.name,
        events: description.historyLength,
        bytes: Number(description.raw.workflowExecutionInfo?.historySizeBytes ?? 0),
      });
    }
    return runs.reverse();
  };
  const stream = async (id: string) =>
    (await readEvents(`${stack.apiUrl}/v1/runs/${id}/events?logs=false`, testToken, { stop: (event) => event.event === 'end', timeoutMs: 300_000 })).filter(
      (event) => event.event !== 'end',
    );

  it('with continue-as-new: every run under the budget, the stream has all 3 × steps events numbered 1..N', async () => {
    const id = `long-run.continued.${Date.now()}`;
    const started = Date.now();
    const result = await stack.client.workflow.execute('longRun', {
      workflowId: id,
      taskQueue,
      args: [{ steps, continueAsNew: true } satisfies LongRunInput],
      workflowExecutionTimeout: '20 minutes',
    });
    const seconds = (Date.now() - started) / 1000;
    const runs = await historyOf(id);
    const total = runs.reduce((sum, run) => ({ events: sum.events + run.events, bytes: sum.bytes + run.bytes }), { events: 0, bytes: 0 });
    console.log(
      `long run, continue-as-new: ${steps} steps in ${seconds.toFixed(1)} s, ${runs.length} runs; history per run (events/bytes): ${runs.map((run) => `${run.events}/${run.bytes}`).join(', ')}; in all ${total.events} events, ${total.bytes} bytes; largest ${Math.max(...runs.map((run) => run.events))} events`,
    );
    assert.deepEqual(result, { steps, runs: runs.length });
    assert.ok(runs.length > 1);
    for (const run of runs)
      assert.ok(
        run.events < 10_000 && run.bytes < 10 * 1024 * 1024,
        `run ${run.runId}: ${run.events} events, ${run.bytes} bytes, under Temporal's warning level`,
      );

    const events = await stream(id);
    const numbers = events.map((event) => event.data.seq as number);
    assert.equal(numbers.length, 3 * steps + (runs.length - 1) + 1, 'every step (started, done, meters), each continue-as-new and the outcome');
    assert.deepEqual(
      numbers,
      Array.from({ length: numbers.length }, (_, index) => index + 1),
      'numbered 1..N, no gap, no repeat',
    );
    assert.equal(events.filter((event) => event.event === 'trimmed').length, 0, 'nothing trimmed');
    assert.equal(events.filter((event) => event.event === 'step' && event.data.status === 'done' && String(event.data.name).startsWith('step#')).length, steps);
  });

  // Another 4–5 minutes on a busy 2-core machine: behind a flag (TARMAC_TEST_LONG_RUN=full), as in docs/BENCHMARKS.md.
  it(
    'without it (for comparison): one history of every step, and a journal that trimmed',
    { skip: process.env.TARMAC_TEST_LONG_RUN === 'full' ? false : 'set TARMAC_TEST_LONG_RUN=full for the comparison run' },
    async () => {
      const id = `long-run.single.${Date.now()}`;
      const started = Date.now();
      await stack.client.workflow.execute('longRun', {
        workflowId: id,
        taskQueue,
        args: [{ steps, continueAsNew: false } satisfies LongRunInput],
        workflowExecutionTimeout: '20 minutes',
      });
      const seconds = (Date.now() - started) / 1000;
      const [run] = await historyOf(id);
      const events = await stream(id);
      const trimmed = events.filter((event) => event.event === 'trimmed');
      console.log(
        `long run, one history: ${steps} steps in ${seconds.toFixed(1)} s; history ${run!.events} events, ${run!.bytes} bytes; the stream kept ${events.length} of ${3 * steps + 1} events (${trimmed.reduce((sum, event) => sum + event.data.dropped, 0)} trimmed)`,
      );
      assert.ok(run!.events > 10_000, `past Temporal's warning level (${run!.events} events)`);
      assert.ok(trimmed.length > 0, 'the bounded journal had to drop events: the stream lost them');
    },
  );
});
