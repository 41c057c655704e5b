import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { containersCreated, landingFinished, startStack, type Stack } from '../helpers/stack';

/** What the suite sees of its sandbox and its tree, printed for the test to read in its log. */
const probe = [
  'echo "pwd=$(pwd)"',
  'echo "files=$(ls -A | sort | tr "\\n" ",")"',
  'echo "tree=$TARMAC_TREE_SHA suite=$TARMAC_SUITE attempt=$TARMAC_GATE_ATTEMPT home=$HOME ci=$CI"',
  'echo "uid=$(id -u)"',
  'grep -E "^(CapEff|NoNewPrivs):" /proc/self/status | tr -s "\\t " " "',
  'echo "interfaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | sort | tr "\\n" ",")"',
  'touch /rootfs-write 2>/dev/null && echo "root=writable" || echo "root=read-only"',
  'touch /tarmac/x 2>/dev/null && echo "control=writable" || echo "control=read-only"',
  'test -f feature.txt',
].join('; ');

/**
 * The standby gate container (activities/gate-standby.ts): started with the placement, before the
 * rebase has made the tree, it runs nothing of the run until its go. The suite it then runs must see
 * exactly what a round's own container shows it — the tree, the environment, the sandbox — and the
 * round must count as that one container.
 */
describe('the standby gate container: started before the tree, the same sandbox and tree when it runs', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(async () => {
    await stack?.stop();
  });

  it('a landing whose gate ran in the standby: made before the rebase ended; exact tree, environment and sandbox; one container', async () => {
    const repo = createFixtureRepo({
      base: { Makefile: 'test:\n\ttrue\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'probe', run: ['sh', '-c', probe] }]) },
      branches: [{ name: 'feature/standby', commits: [{ message: 'a feature', files: { 'feature.txt': 'f\n' } }] }],
    });
    const since = Math.floor(Date.now() / 1000);
    const created = await stack.api('POST', '/v1/landings', { repo: repo.url, branches: ['feature/standby'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const view = await landingFinished(stack, created.body.id);
    assert.equal(view.outcome.status, 'landed', view.outcome.summary);
    const gate = view.outcome.gates[0];
    assert.equal(gate.status, 'passed');
    const log = readFileSync(join(stack.dataDir, gate.logRef), 'utf8').replace(/^\S+Z /gm, '');
    // The tree, exactly: the target's files and the branch's, nothing of git, nothing else.
    assert.match(log, /^pwd=\/workspace$/m);
    assert.match(log, /^files=\.config,Makefile,feature\.txt,$/m);
    assert.match(log, new RegExp(`^tree=${view.outcome.treeSha} suite=probe attempt=1 home=/tmp ci=1$`, 'm'));
    // The sandbox: the agents' uid, no capabilities, no new privileges, loopback only, read-only root,
    // and the standby's own control mount read-only too.
    assert.match(log, /^uid=1000$/m);
    assert.match(log, /^CapEff: 0000000000000000$/m);
    assert.match(log, /^NoNewPrivs: 1$/m);
    assert.match(log, /^interfaces=lo,$/m);
    assert.match(log, /^root=read-only$/m);
    assert.match(log, /^control=read-only$/m);

    // One gate container for the round — the standby — and it was made before the rebase had made the tree.
    assert.equal(await containersCreated(stack.docker, since, [`tarmac.run=${created.body.id}`, 'tarmac.role=gate']), 1);
    assert.equal(await containersCreated(stack.docker, since, [`tarmac.run=${created.body.id}`, 'tarmac.standby=true']), 1);
    const rebased = view.steps.find((step: { name: string }) => step.name === 'capsule.rebaseBranches');
    const events = await stack.docker.getEvents({ since, until: Math.ceil(Date.now() / 1000) + 1, filters: JSON.stringify({ type: ['container'], event: ['create'], label: [`tarmac.run=${created.body.id}`, 'tarmac.standby=true'] }) });
    const chunks: Buffer[] = [];
    for await (const chunk of events as AsyncIterable<Buffer>) chunks.push(chunk);
    const made = Buffer.concat(chunks).toString().split('\n').filter(Boolean).map((line) => Number((JSON.parse(line) as { timeNano: number }).timeNano) / 1e6);
    assert.equal(made.length, 1, 'made once');
    assert.ok(made[0]! < Date.parse(rebased.endedAt), `the standby was made at ${new Date(made[0]!).toISOString()}, the rebase ended at ${rebased.endedAt}`);
    // Gone with the run's cleanup.
    assert.equal((await stack.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.run=${created.body.id}`] }) })).length, 0);
  });
});
