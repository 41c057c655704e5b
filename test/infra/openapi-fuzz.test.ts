import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { startStack, testToken, waitFor, type Stack } from '../helpers/stack';

const root = resolve(__dirname, '../..');

/** Runs scripts/fuzz-api.sh against the stack; its exit code and everything it printed. */
function fuzz(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn('bash', [join(root, 'scripts/fuzz-api.sh')], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', fail);
    child.once('exit', (code) => done({ code, output }));
  });
}

async function workflowIds(stack: Stack): Promise<string[]> {
  const ids: string[] = [];
  for await (const execution of stack.client.workflow.list()) ids.push(execution.workflowId);
  // The runs of the worker's own retention schedule (at the top of each hour) are not the fuzzer's doing.
  return ids.filter((id) => !id.startsWith('tarmac.retention.')).sort();
}

describe('OpenAPI fuzz run (schemathesis, scripts/fuzz-api.sh): no 5xx, no answer the document does not describe', () => {
  let stack: Stack;
  let landingId: string;
  let runsBefore: string[];

  before(async () => {
    // Nothing the fuzzer sends may reach past loopback and temp dirs. Git in the API and the
    // worker speaks file:// only, so a made-up https:// or user@host: repo fails at once instead
    // of going to the network; relative repo paths resolve in an empty temp dir, not in this checkout.
    process.env.GIT_ALLOW_PROTOCOL = 'file';
    process.chdir(mkdtempSync(join(tmpdir(), 'tarmac-fuzz-cwd-')));
    stack = await startStack();

    // One finished landing, so that the {id} routes answer 200 (status, run, event stream) too.
    const repo = createFixtureRepo({
      base: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['true'] }]) },
      branches: [{ name: 'feature/ok', commits: [{ message: 'ok', files: { 'a.txt': 'a\n' } }] }],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/ok'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    landingId = created.body.id;
    await waitFor(
      () => stack.api('GET', `/v1/landings/${landingId}`),
      (view) => view.body.workflowStatus === 'COMPLETED',
      180_000,
      'the fixture landing to finish',
    );
    // The fuzzer reads the repo URL from the landing and sends it back (stateful links): with the
    // repo gone, a generated fix loop or review on it is a 400, not a run with real agents.
    rmSync(dirname(repo.path), { recursive: true, force: true });
    runsBefore = await workflowIds(stack);
  });
  after(async () => {
    await stack?.stop();
  });

  it('finds nothing: every operation, 100 examples per phase, fixed seed', { timeout: 10 * 60_000 }, async () => {
    const { code, output } = await fuzz({ TARMAC_FUZZ_URL: stack.apiUrl, TARMAC_FUZZ_TOKEN: testToken, TARMAC_FUZZ_RUN_ID: landingId });
    assert.equal(code, 0, `schemathesis found problems (exit ${code}):\n${output}`);
    const selected = /Selected: (\d+)\/(\d+)/.exec(output);
    assert.ok(selected && selected[1] === selected[2] && Number(selected[1]) >= 15, `every operation is fuzzed:\n${output}`);
    assert.match(output, /Tested: \d+/);
  });

  it('started no run and created no schedule while fuzzing', async () => {
    assert.deepEqual(await workflowIds(stack), runsBefore);
    const schedules: string[] = [];
    for await (const schedule of stack.client.schedule.list()) schedules.push(schedule.scheduleId);
    // The worker's own retention schedule (one per host, made when it starts) is not the fuzzer's doing.
    assert.deepEqual(
      schedules.filter((id) => id !== 'tarmac.retention.test-host'),
      [],
    );
  });

  // Found by the fuzz run: Temporal answers "workflow execution already completed" as not-found, which was a 500.
  it('answers 409 to a budget command for a finished run', async () => {
    const response = await stack.api('POST', `/v1/runs/${landingId}/budget`, { action: 'stop' });
    assert.equal(response.status, 409, JSON.stringify(response.body));
    assert.equal(response.body.error.code, 'TARMAC_CONFLICT');
    assert.match(response.body.error.message, /not running \(COMPLETED\)/);
  });
});
