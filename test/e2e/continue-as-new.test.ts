import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultRecipesDir } from '../../core/node/recipes';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { readEvents, type WireEvent } from '../helpers/sse';
import { startStack, testToken, waitFor, type Stack } from '../helpers/stack';

const base = {
  Makefile: 'test:\n\tnode test.js\n',
  'value.js': 'module.exports = 1;\n',
  'test.js': "if (require('./value.js') < 1) process.exit(1);\nconsole.log('suite ok');\n",
  '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'], timeout: '2m' }]),
};

describe('a landing continues as new when its history is long: one run to the API, its event stream whole and exact', () => {
  let stack: Stack;
  let recipesDir: string;
  before(async () => {
    // The recipe's history budget at its floor (20 events): the landing continues as new between most phases.
    recipesDir = mkdtempSync(join(tmpdir(), 'tarmac-test-recipes-'));
    cpSync(defaultRecipesDir, recipesDir, { recursive: true });
    const limits = JSON.parse(readFileSync(join(recipesDir, 'limits.json'), 'utf8'));
    writeFileSync(join(recipesDir, 'limits.json'), `${JSON.stringify({ ...limits, landing: { ...limits.landing, historyEvents: 20 } }, null, 2)}\n`);
    stack = await startStack({ recipesDir });
  });
  after(async () => {
    await stack?.stop();
    if (recipesDir) rmSync(recipesDir, { recursive: true, force: true });
  });

  it('lands across several runs; the stream (live, replayed, resumed) has every event once, numbered 1..N', async () => {
    const repo = createFixtureRepo({
      base,
      branches: [
        {
          name: 'feature/gate',
          commits: [
            { message: 'value: 2', files: { 'value.js': 'module.exports = 2;\n' } },
            { message: 'gate: a longer timeout', files: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'], timeout: '3m' }]) } },
          ],
        },
      ],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/gate'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    const url = `${stack.apiUrl}/v1/landings/${id}/events?logs=false`;
    // A client that follows the landing live, from its first event to its end, across every continue-as-new.
    const live = readEvents(url, testToken, { stop: (event) => event.event === 'end', timeoutMs: 240_000 });

    // Questions first (the branch changes the gate file): the question waits in a run that may have continued.
    const waiting = await waitFor(
      () => stack.api('GET', `/v1/landings/${id}`),
      (response) => response.body.pendingQuestions?.length === 1,
      120_000,
      'the question',
    );
    assert.match(waiting.body.pendingQuestions[0].question, /land-gate\.json/);
    const answered = await stack.api('POST', `/v1/landings/${id}/answers`, { text: 'approve' });
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    const view = (
      await waitFor(
        () => stack.api('GET', `/v1/landings/${id}`),
        (response) => response.body.workflowStatus !== 'RUNNING',
        180_000,
        'the landing to finish',
      )
    ).body;
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    assert.equal(branchHead(repo.path, 'main'), branchHead(repo.path, 'feature/gate'));

    // Temporal: several runs under one workflow id, each with a short history.
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
    runs.reverse();
    console.log(`landing ${id}: ${runs.length} runs; history per run (events, bytes): ${runs.map((run) => `${run.events}/${run.bytes}`).join(', ')}`);
    assert.ok(runs.length >= 2, `the landing continued as new (runs: ${runs.length})`);
    assert.deepEqual(
      runs.map((run) => run.status),
      [...runs.slice(1).map(() => 'CONTINUED_AS_NEW'), 'COMPLETED'],
    );
    // A run continues at the first phase boundary past the budget: one phase (at most a few dozen events here) over it.
    for (const run of runs) assert.ok(run.events < 20 + 60, `run ${run.runId} stayed near its budget (${run.events} events)`);

    // The whole stream, read after the end: every number once, 1..N, nothing trimmed.
    const replayed = await readEvents(url, testToken, { stop: (event) => event.event === 'end' });
    const journal = replayed.filter((event) => event.event !== 'end');
    const numbers = journal.map((event) => event.data.seq as number);
    assert.deepEqual(
      numbers,
      Array.from({ length: numbers.length }, (_, index) => index + 1),
      'numbered 1..N with no gap and no repeat',
    );
    assert.equal(journal.filter((event) => event.event === 'trimmed').length, 0, 'nothing trimmed');
    const continues = journal.filter((event) => event.event === 'step' && event.data.name === 'workflow.continueAsNew');
    assert.equal(continues.length, runs.length - 1, 'each continue-as-new is in the stream, with its reason');
    for (const event of continues)
      assert.match(event.data.detail, /its history has \d+ events \(continues at 20\): run \d+ of this landing goes on with phase \w+/);
    const phases = journal.filter((event) => event.event === 'phase').map((event) => event.data.phase as string);
    assert.deepEqual(phases, ['validate', 'prepare', 'rebase', 'questions', 'gate', 'verify', 'queue', 'merge', 'cleanup', 'done']);
    assert.deepEqual(
      journal.filter((event) => event.event === 'question').map((event) => event.data.answer ?? null),
      [null, 'approve'],
      'the question and its answer',
    );
    assert.equal(replayed.at(-1)!.event, 'end');
    assert.equal(replayed.at(-1)!.data.outcome.status, 'landed');

    // The live client saw the same events, in the same order, with the same ids.
    const seenLive = await live;
    assert.deepEqual(
      seenLive.filter((event) => event.event !== 'end').map((event) => [event.id, event.event, event.data.seq]),
      journal.map((event) => [event.id, event.event, event.data.seq]),
    );

    // Resuming from a cursor in the first run: exactly the rest, across the runs.
    const firstRunEnd = journal.indexOf(continues[0]!);
    const resumeAt: WireEvent = journal[Math.floor(firstRunEnd / 2)]!;
    const resumed = (await readEvents(url, testToken, { lastEventId: resumeAt.id!, stop: (event) => event.event === 'end' })).filter(
      (event) => event.event !== 'end',
    );
    assert.deepEqual(
      resumed.map((event) => event.data.seq),
      numbers.filter((seq) => seq > resumeAt.data.seq),
    );

    // The status and the outcome carry the whole record, and the list shows the landing once.
    assert.equal(view.steps[0].name, 'capsule.inspectTarget', 'steps of the first run are in the status');
    assert.ok(view.steps.some((step: { name: string }) => step.name === 'capsule.fastForwardTarget'));
    assert.equal(view.outcome.gates.length, 1);
    assert.equal(view.outcome.questions.length, 1);
    const listed = await stack.api('GET', `/v1/landings?repo=${encodeURIComponent(repo.url)}`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(
      listed.body.landings.map((item: { id: string }) => item.id),
      [id],
    );
  });
});
