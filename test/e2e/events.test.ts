import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../api/app';
import { freePort } from '../../infra/ports';
import { branchHead, createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { searchAttributes } from '../../core/search-attributes';
import { readEvents, type WireEvent } from '../helpers/sse';
import { cleanedUp, landingFinished, startStack, testToken, waitFor, type Stack } from '../helpers/stack';

/** A gate that talks slowly (so a client can drop mid-run) and is red until FIXED exists. */
const slowGate = gateFile([{ id: 'check', run: ['sh', '-c', 'for i in 1 2 3 4 5 6; do echo line-$i; sleep 0.3; done; sh check.sh'] }], {
  fixup: { maxRounds: 1 },
});
/** The scripted fixer in scenario `write-fixed` (written in `before`): it commits FIXED. */
const fixerAgents = { fixer: 'script#fixer:write-fixed', ladder: ['script#fixer:write-fixed'] };

function fixupRepo() {
  return createFixtureRepo({
    base: { 'check.sh': 'test -f FIXED || { echo "FIXED is missing"; exit 4; }\n', '.config/tarmac/land-gate.json': slowGate },
    branches: [{ name: 'feature/live', commits: [{ message: 'feature without the fix', files: { 'feature.txt': 'f\n' } }] }],
  });
}

const journal = (events: WireEvent[]) => events.filter((event) => event.event !== 'log' && event.event !== 'end');
const logLines = (events: WireEvent[], file: string) =>
  events.filter((event) => event.event === 'log' && event.data.file === file).map((event) => event.data.line);

describe('live events: GET /v1/landings/:id/events (SSE)', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
    stack.scriptScenario('write-fixed', { edits: [{ file: 'FIXED', replace: 'yes\n' }] });
  });
  after(async () => {
    await stack?.stop();
  });

  it('streams phases, steps, gates, sessions, meters and log lines; a client that reconnects with Last-Event-ID gets no gap and no duplicate', async () => {
    const repo = fixupRepo();
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/live'], target: 'main', agents: fixerAgents });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const url = `${stack.apiUrl}/v1/landings/${created.body.id}/events`;

    // First connection: drop it in the middle of the first gate's output.
    const first = await readEvents(url, testToken, { stop: (event) => event.event === 'log' && event.data.line === 'line-3' });
    const resumeAt = first.at(-1)!.id!;
    assert.ok(resumeAt, 'every event carries an id');
    // Second connection resumes where the first stopped and runs to the end.
    const second = await readEvents(url, testToken, { lastEventId: resumeAt, stop: (event) => event.event === 'end' });
    assert.equal(second.at(-1)!.event, 'end', 'the stream ends with an end event');
    assert.equal(second.at(-1)!.data.outcome.status, 'landed', second.at(-1)!.data.outcome.summary);
    // A third reader, after the run, reads the whole record from the start: the reference.
    const whole = await readEvents(url, testToken, { stop: (event) => event.event === 'end' });

    const stitched = [...first, ...second];
    const seqs = journal(stitched).map((event) => event.data.seq);
    assert.deepEqual(
      seqs,
      journal(whole).map((event) => event.data.seq),
      'journal events: the same numbers as a full read',
    );
    assert.deepEqual(
      seqs,
      Array.from({ length: seqs.length }, (_unused, index) => index + 1),
      'numbered 1..n with no gap and no repeat',
    );
    // Compared without their clock readings: an event's `at` (and the meters' wall time) is the
    // workflow's time, and a workflow task that is retried (a transient task after a failed
    // completion) runs again at a later time — a live reader may have read the first attempt's.
    const unclocked = (data: Record<string, unknown>) => {
      const { at: _at, ...rest } = data;
      const meters = rest.meters as Record<string, unknown> | undefined;
      if (!meters) return rest;
      const { wallTimeMs: _wall, ...counts } = meters;
      return { ...rest, meters: counts };
    };
    const withoutIds = (events: WireEvent[]) => events.map(({ event, data }) => ({ event, data: unclocked(data) }));
    assert.deepEqual(withoutIds(journal(stitched)), withoutIds(journal(whole)), 'the same journal events, in the same order');
    for (const [index, event] of journal(stitched).entries()) {
      const drift = Math.abs(Date.parse(event.data.at) - Date.parse(journal(whole)[index]!.data.at));
      assert.ok(drift < 10_000, `event ${event.data.seq}: read live at ${event.data.at}, after the run at ${journal(whole)[index]!.data.at}`);
    }
    const files = [...new Set(whole.filter((event) => event.event === 'log').map((event) => event.data.file))];
    assert.ok(files.length >= 4, `gate round 1, the fix loop's repro and session, gate round 2 logged: ${files.join(', ')}`);
    for (const file of files) assert.deepEqual(logLines(stitched, file), logLines(whole, file), `log ${file}: every line once, in order`);
    assert.equal(new Set(stitched.map((event) => event.id)).size, stitched.length, 'no id repeats');

    // What a user watching the stream sees.
    const phases = journal(whole)
      .filter((event) => event.event === 'phase')
      .map((event) => event.data.phase);
    assert.deepEqual(phases, ['validate', 'prepare', 'rebase', 'questions', 'gate', 'fixup', 'gate', 'verify', 'queue', 'merge', 'cleanup', 'done']);
    const gates = journal(whole)
      .filter((event) => event.event === 'gate' && !event.data.evidence)
      .map((event) => `${event.data.round}:${event.data.status}`);
    assert.deepEqual(gates, ['1:failed', '2:passed']);
    // Round 1's red was settled by evidence before its fixup round: red again on the same tree and on the base (pre-existing).
    const evidence = journal(whole)
      .filter((event) => event.event === 'gate' && event.data.evidence)
      .map((event) => `${event.data.round}:${event.data.evidence}:${event.data.status}`);
    assert.deepEqual(evidence.sort(), ['1:base:failed', '1:same-tree:failed']);
    const sessionTypes = journal(whole)
      .filter((event) => event.event === 'session')
      .map((event) => event.data.type);
    for (const type of ['spawned', 'first-turn', 'classified', 'delivered'])
      assert.ok(sessionTypes.includes(type), `session ${type} in ${sessionTypes.join(', ')}`);
    assert.ok(sessionTypes.indexOf('spawned') < sessionTypes.indexOf('delivered'), 'spawned before delivered');
    const classified = journal(whole).find((event) => event.event === 'session' && event.data.type === 'classified')!;
    assert.equal(classified.data.class, 'delivered');
    assert.equal(classified.data.role, 'implementer');
    const meters = journal(whole)
      .filter((event) => event.event === 'meters')
      .at(-1)!;
    assert.ok(meters.data.meters.containersRun >= 2, 'meters count the gate containers');
    const gateLines = logLines(
      whole,
      files.find((file) => file.startsWith('gate-check-') && file.endsWith('-r1.log')),
    );
    assert.deepEqual(gateLines.slice(0, 6), ['line-1', 'line-2', 'line-3', 'line-4', 'line-5', 'line-6']);
    assert.ok(gateLines.includes('FIXED is missing'), 'the red gate says why');
    const outcome = journal(whole).find((event) => event.event === 'outcome')!;
    assert.equal(outcome.data.status, 'landed');
    assert.equal(branchHead(repo.path, 'main'), whole.at(-1)!.data.outcome.mergedSha);

    // The Web UI finds the landing and its children by the Tarmac* attributes; each has a memo and answers `status`.
    const landing = await stack.client.workflow.getHandle(created.body.id).describe();
    assert.equal(landing.typedSearchAttributes.get(searchAttributes.phase), 'done', 'the phase attribute followed the run to its end');
    assert.equal(landing.typedSearchAttributes.get(searchAttributes.outcome), 'landed');
    assert.match(String((landing.memo as { recipeVersion?: string }).recipeVersion), /^[0-9a-f]{12}$/, 'memo names the recipe version');
    const children = await waitFor(
      async () => {
        const found = [];
        for await (const execution of stack.client.workflow.list({ query: `TarmacKind = 'agent-session' AND TarmacRepo = '${repo.url}'` }))
          found.push(execution);
        return found;
      },
      (found) => found.length === 1,
      30_000,
      'the fix loop’s session in visibility',
    );
    assert.equal(children[0]!.workflowId, `${created.body.id}.fixup-1-implementer-1`);
    assert.equal((children[0]!.memo as { parent?: string }).parent, `${created.body.id}.fixup-1`, 'its parent: the fix loop of fixup round 1');
    const sessionStatus = await stack.client.workflow.getHandle(children[0]!.workflowId).query<{ state: string }>('status');
    assert.equal(sessionStatus.state, 'done');
  });

  it('rejects a malformed Last-Event-ID (400 naming it), an unknown landing (404) and a missing token (401)', async () => {
    const bad = await fetch(`${stack.apiUrl}/v1/landings/nope/events`, { headers: { authorization: `Bearer ${testToken}`, 'last-event-id': '../etc' } });
    assert.equal(bad.status, 400);
    const badBody = (await bad.json()) as { error: { code: string; details: { field: string } } };
    assert.equal(badBody.error.code, 'TARMAC_VALIDATION');
    assert.equal(badBody.error.details.field, 'Last-Event-ID');
    const missing = await stack.api('GET', '/v1/landings/landing-does-not-exist/events');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'TARMAC_NOT_FOUND');
    const anonymous = await stack.api('GET', '/v1/landings/landing-does-not-exist/events', undefined, null);
    assert.equal(anonymous.status, 401);
  });

  it('an open stream does not hold up shutdown: closing the API ends it promptly', async () => {
    const repo = createFixtureRepo({
      base: { '.config/tarmac/land-gate.json': gateFile([{ id: 'slow', run: ['sleep', '20'] }]) },
      branches: [{ name: 'feature/slow', commits: [{ message: 'slow', files: { 'a.txt': 'a\n' } }] }],
    });
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/slow'], target: 'main' });
    // A second API instance, so closing it does not take the shared one down.
    const app = await buildApp({ client: stack.client, config: stack.config });
    const port = await freePort();
    await app.listen({ host: '127.0.0.1', port });
    let opened!: () => void;
    const streaming = new Promise<void>((resolve) => (opened = resolve));
    const reading = readEvents(`http://127.0.0.1:${port}/v1/landings/${created.body.id}/events`, testToken, {
      timeoutMs: 60_000,
      stop: () => {
        opened();
        return false;
      },
    });
    await streaming;
    const started = Date.now();
    await app.close();
    const closedIn = Date.now() - started;
    const events = await reading;
    assert.ok(closedIn < 5_000, `app.close() took ${closedIn} ms with a stream open`);
    assert.ok(events.length > 0, 'the stream had delivered events before the shutdown');
    assert.notEqual(events.at(-1)!.event, 'end', 'the run was still going: the stream was cut by the shutdown, not finished');
    // Cancelled and finished before the stack stops: its finale removes the gate container.
    await stack.api('POST', `/v1/landings/${created.body.id}/cancel`);
    const cancelled = await landingFinished(stack, created.body.id, 60_000);
    assert.equal(cancelled.outcome.status, 'cancelled', cancelled.outcome.summary);
    await cleanedUp(stack.dataDir, created.body.id);
    const left = await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${created.body.id}`] }) });
    assert.deepEqual(left, [], 'no container of the cancelled run is left');
  });
});
