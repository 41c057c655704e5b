import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import type { NightlyOutcome } from '../../core/nightly-types';
import { nightlyScheduleId } from '../../core/node/schedule-id';
import { branchHead, createFixtureRepo, gateFile, type FixtureRepo } from '../../infra/fixture-repo';
import { runOnRef } from '../helpers/fix-loop';
import { startStack, waitFor, type Stack } from '../helpers/stack';
import { git, treeOf } from '../helpers/git';

/**
 * Nightly schedules through the real HTTP API, on the real stack: a Temporal Schedule
 * whose run gates the target head; red → a fix loop on a run-owned repair branch →
 * a landing of that branch onto the target.
 */
describe('nightly schedules', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  /** Workflow ids of one kind of run on a repo, as the Web UI filter finds them. */
  async function runsOf(kind: string, repo: string, extra = ''): Promise<string[]> {
    const ids: string[] = [];
    for await (const execution of stack.client.workflow.list({ query: `TarmacKind = '${kind}' AND TarmacRepo = '${repo}'${extra}` }))
      ids.push(execution.workflowId);
    return ids;
  }
  /** Triggers the schedule and waits for the run it started to complete; returns the run and its outcome. */
  async function triggerAndWait(id: string): Promise<{ workflowId: string; outcome: NightlyOutcome }> {
    const triggered = await stack.api('POST', `/v1/schedules/${id}/trigger`);
    assert.equal(triggered.status, 202, JSON.stringify(triggered.body));
    const view = await waitFor(
      () => stack.api('GET', `/v1/schedules/${id}`),
      (response) => ['COMPLETED', 'FAILED', 'TERMINATED', 'TIMED_OUT'].includes(response.body?.recentRuns?.[0]?.workflowStatus),
      480_000,
      'the nightly run',
    );
    const [run] = view.body.recentRuns;
    assert.equal(run.workflowStatus, 'COMPLETED', JSON.stringify(run));
    return { workflowId: run.workflowId, outcome: run.outcome as NightlyOutcome };
  }

  describe('validation: 400 naming the field, and no schedule is created', () => {
    let repo: FixtureRepo;
    before(() => {
      repo = createFixtureRepo({ base: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['true'] }]) } });
    });
    const cases: { name: string; body: () => Record<string, unknown>; field: string; code?: string; message?: RegExp }[] = [
      {
        name: 'a cron with four fields',
        body: () => ({ repo: repo.url, target: 'main', cron: '0 3 * *' }),
        field: 'cron',
        message: /^cron must have 5 fields/,
      },
      {
        name: 'an hour out of range',
        body: () => ({ repo: repo.url, target: 'main', cron: '0 25 * * *' }),
        field: 'cron',
        message: /field 2 \(hour\): value 25 is out of range 0-23/,
      },
      { name: 'a cron in words', body: () => ({ repo: repo.url, target: 'main', cron: 'every night' }), field: 'cron' },
      {
        name: 'an unknown time zone',
        body: () => ({ repo: repo.url, target: 'main', timezone: 'Mars/Olympus_Mons' }),
        field: 'timezone',
        message: /not a known IANA time zone/,
      },
      { name: 'an invalid target name', body: () => ({ repo: repo.url, target: 'a..b' }), field: 'target', message: /\.\./ },
      { name: 'a target that does not exist', body: () => ({ repo: repo.url, target: 'develop' }), field: 'target', message: /does not exist/ },
      {
        name: 'a repo that does not exist',
        body: () => ({ repo: join(tmpdir(), 'tarmac-nonexistent', 'repo'), target: 'main' }),
        field: 'repo',
        message: /does not exist/,
      },
      { name: 'a missing repo', body: () => ({ target: 'main' }), field: 'repo', message: /required/ },
      { name: 'paused as a string', body: () => ({ repo: repo.url, target: 'main', paused: 'yes' }), field: 'paused' },
      { name: 'an unknown field', body: () => ({ repo: repo.url, target: 'main', every: 'night' }), field: 'every', message: /not a known field/ },
      {
        name: 'an unknown implementer',
        body: () => ({ repo: repo.url, target: 'main', agents: { implementer: 'claude-code#falbe-5' } }),
        field: 'agents.implementer',
        code: 'TARMAC_UNKNOWN_MODEL',
      },
    ];
    for (const { name, body, field, code, message } of cases) {
      it(name, async () => {
        const response = await stack.api('POST', '/v1/schedules', body());
        assert.equal(response.status, 400, JSON.stringify(response.body));
        assert.equal(response.body.error.code, code ?? 'TARMAC_VALIDATION');
        assert.equal(response.body.error.details.field, field);
        if (message) assert.match(response.body.error.message, message);
      });
    }
    it('left no schedule behind', async () => {
      const list = await stack.api('GET', '/v1/schedules');
      assert.equal(list.status, 200);
      assert.deepEqual(list.body.schedules, []);
      // The list is eventually consistent; the schedule's own id is not.
      const direct = await stack.api('GET', `/v1/schedules/${nightlyScheduleId(repo.url, 'main')}`);
      assert.equal(direct.status, 404);
      assert.equal(direct.body.error.code, 'TARMAC_NOT_FOUND');
    });
  });

  describe('create, repeat, conflict, list, describe, delete', () => {
    let repo: FixtureRepo;
    before(() => {
      repo = createFixtureRepo({
        base: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['true'] }]) },
        branches: [{ name: 'release/1', commits: [{ message: 'r', files: { 'r.txt': 'r\n' } }] }],
      });
    });

    it('creates with the defaults (03:00 UTC, not paused); the same request again is 200 with the same id; another cron is 409', async () => {
      const first = await stack.api('POST', '/v1/schedules', { repo: repo.url, target: 'main' });
      assert.equal(first.status, 201, JSON.stringify(first.body));
      assert.equal(first.body.id, nightlyScheduleId(repo.url, 'main'));
      assert.equal(first.body.cron, '0 3 * * *');
      assert.equal(first.body.timezone, 'UTC');
      assert.equal(first.body.paused, false);
      assert.equal(first.body.duplicate, false);
      assert.ok(first.body.nextRuns.length > 0);
      for (const next of first.body.nextRuns) assert.match(next, /T03:00:00\.000Z$/, 'every next run is at 03:00 UTC');

      const again = await stack.api('POST', '/v1/schedules', { repo: repo.url, target: 'main', cron: '0  3 * * *' });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.equal(again.body.id, first.body.id);
      assert.equal(again.body.duplicate, true);

      const other = await stack.api('POST', '/v1/schedules', { repo: repo.url, target: 'main', cron: '0 4 * * *' });
      assert.equal(other.status, 409, JSON.stringify(other.body));
      assert.equal(other.body.error.code, 'TARMAC_CONFLICT');
      assert.equal(other.body.error.details.id, first.body.id);
      assert.equal(other.body.error.details.existing.cron, '0 3 * * *');

      const deleted = await stack.api('DELETE', `/v1/schedules/${first.body.id}`);
      assert.equal(deleted.status, 200);
      assert.equal((await stack.api('GET', `/v1/schedules/${first.body.id}`)).status, 404);
      assert.equal((await stack.api('DELETE', `/v1/schedules/${first.body.id}`)).status, 404);
      assert.equal((await stack.api('POST', `/v1/schedules/${first.body.id}/trigger`)).status, 404);
    });

    it('reads the cron in the given time zone; Sunday as 7 is accepted by the server too; lists and describes it', async () => {
      const created = await stack.api('POST', '/v1/schedules', {
        repo: repo.url,
        target: 'release/1',
        cron: '30 4 * * 7',
        timezone: 'America/New_York',
        paused: true,
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const local = (iso: string) =>
        new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(
          new Date(iso),
        );
      assert.ok(created.body.nextRuns.length > 0);
      for (const next of created.body.nextRuns) assert.equal(local(next), 'Sun 04:30', `${next} is Sunday 04:30 in New York`);

      const list = await waitFor(
        () => stack.api('GET', '/v1/schedules'),
        (response) => response.body.schedules.some((entry: { id: string }) => entry.id === created.body.id),
        30_000,
        'the list',
      );
      const entry = list.body.schedules.find((item: { id: string }) => item.id === created.body.id);
      assert.equal(entry.target, 'release/1');
      assert.equal(entry.paused, true);

      const view = await stack.api('GET', `/v1/schedules/${created.body.id}`);
      assert.equal(view.status, 200);
      assert.equal(view.body.cron, '30 4 * * 7');
      assert.equal(view.body.timezone, 'America/New_York');
      assert.equal(view.body.paused, true);
      assert.deepEqual(view.body.recentRuns, []);
      assert.equal((await stack.api('DELETE', `/v1/schedules/${created.body.id}`)).status, 200);
    });
  });

  it('a red target gate: the nightly repairs it on a run-owned branch, lands it, and names both', async () => {
    // `make smoke` has no rule, but scripts/smoke.sh exists: the make-target-from-script playbook repairs it.
    const repo = createFixtureRepo({
      base: {
        '.config/tarmac/land-gate.json': gateFile([{ id: 'smoke', run: ['make', 'smoke'] }]),
        Makefile: 'test:\n\ttrue\n',
        'scripts/smoke.sh': 'echo smoke ok\n',
      },
    });
    const before = branchHead(repo.path, 'main');
    assert.notEqual(runOnRef(repo.path, 'main', 'make smoke').status, 0, 'the gate is red on the target head');
    const created = await stack.api('POST', '/v1/schedules', { repo: repo.url, target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));

    const { workflowId, outcome } = await triggerAndWait(created.body.id);
    assert.ok(workflowId.startsWith(`${created.body.id}-`), workflowId);
    assert.equal(outcome.status, 'repaired', outcome.summary);
    assert.equal(outcome.targetSha, before);
    assert.deepEqual(outcome.failingSuites, ['smoke']);
    assert.equal(outcome.gates[0]?.status, 'failed');
    assert.equal(outcome.fixLoop?.outcome, 'fixed');
    assert.equal(outcome.fixLoop?.playbookUsed, 'make-target-from-script');
    assert.deepEqual(outcome.fixLoop?.filesChanged, ['Makefile']);

    // The repair branch is on the origin, owned by this run, with a commit that makes the gate pass.
    const repairBranch = outcome.repairBranch!;
    assert.match(repairBranch, /^tarmac\/fix\/nightly\.[A-Za-z0-9._-]+\.fix$/);
    const repairHead = branchHead(repo.path, repairBranch);
    assert.equal(git(repo.path, 'rev-list', '--count', `${before}..${repairHead}`), '1');
    assert.equal(git(repo.path, 'diff', '--name-only', before, repairHead), 'Makefile');
    assert.equal(runOnRef(repo.path, repairBranch, 'make smoke').status, 0, 'the repair branch passes the gate');

    // The landing of that branch ran under the API's id and merged: the target advanced to a green commit.
    assert.equal(outcome.landing?.status, 'landed', outcome.landing?.summary);
    const landing = await stack.api('GET', `/v1/landings/${outcome.landing.id}`);
    assert.equal(landing.status, 200);
    assert.equal(landing.body.workflowStatus, 'COMPLETED');
    assert.equal(landing.body.outcome.status, 'landed');
    assert.deepEqual(landing.body.outcome.heads, [{ branch: repairBranch, sha: repairHead }]);
    const after = branchHead(repo.path, 'main');
    assert.notEqual(after, before, 'the target advanced');
    assert.equal(after, outcome.landing?.mergedSha);
    assert.doesNotThrow(() => git(repo.path, 'merge-base', '--is-ancestor', repairHead, after), 'the target contains the repair');
    assert.equal(runOnRef(repo.path, 'main', 'make smoke').status, 0, 'the gate passes on the new target head');

    // What the Web UI filters on: the nightly's outcome; the landing under its usual kind and branch.
    const nightlies = await waitFor(
      () => runsOf('nightly', repo.url, ` AND TarmacOutcome = 'repaired' AND TarmacTarget = 'main'`),
      (ids) => ids.length === 1,
      30_000,
      'the nightly in visibility',
    );
    assert.deepEqual(nightlies, [workflowId]);
    assert.deepEqual(await runsOf('landing', repo.url, ` AND TarmacBranch = '${repairBranch}'`), [outcome.landing.id]);
    const status = await stack.client.workflow.getHandle(workflowId).query('status');
    assert.equal((status as { repairBranch?: string }).repairBranch, repairBranch);

    // Its recipes: resolved as its first step (a schedule, not the API, started it), named in its
    // memo, and handed to its fix loop and its landing (the landing's memo names the same version).
    const version = (await stack.api('GET', '/v1/recipes')).body.version as string;
    assert.equal((await stack.client.workflow.getHandle(workflowId).describe()).memo?.recipeVersion, version);
    assert.equal((await stack.client.workflow.getHandle(outcome.landing.id).describe()).memo?.recipeVersion, version);
    for (const child of [outcome.fixLoop?.id, outcome.landing.id]) {
      const history = await stack.client.workflow.getHandle(child).fetchHistory();
      const input = defaultPayloadConverter.fromPayload<{ recipes?: { version: string } }>(
        history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!,
      );
      assert.equal(input.recipes?.version, version, `${child} carries the nightly's snapshot`);
    }
  });

  it('a green target gate: outcome green, no repair branch, no fix loop, no landing, target unchanged', async () => {
    const repo = createFixtureRepo({
      base: { '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'] }]), Makefile: 'test:\n\ttrue\n' },
    });
    const before = branchHead(repo.path, 'main');
    // Paused: only the trigger runs it (and the test never races a 03:00 run).
    const created = await stack.api('POST', '/v1/schedules', { repo: repo.url, target: 'main', paused: true });
    assert.equal(created.status, 201, JSON.stringify(created.body));

    const { workflowId, outcome } = await triggerAndWait(created.body.id);
    assert.equal(outcome.status, 'green', outcome.summary);
    assert.deepEqual(
      outcome.gates.map((gate) => [gate.suiteId, gate.status, gate.treeSha]),
      [['test', 'passed', treeOf(repo.path, before)]],
    );
    assert.equal(outcome.repairBranch, undefined);
    assert.equal(outcome.landing, undefined);
    assert.equal(outcome.fixLoop, undefined);
    assert.equal(git(repo.path, 'for-each-ref', 'refs/heads/tarmac/'), '', 'no repair branch on the origin');
    assert.equal(branchHead(repo.path, 'main'), before);
    await waitFor(
      () => runsOf('nightly', repo.url, ` AND TarmacOutcome = 'green'`),
      (ids) => ids.includes(workflowId),
      30_000,
      'the nightly in visibility',
    );
    assert.deepEqual(await runsOf('landing', repo.url), []);
    assert.deepEqual(await runsOf('fix-loop', repo.url), []);
  });
});
