import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { defaultRecipesDir, loadRecipes } from '../../core/node/recipes';
import { createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import { landingFinished, startStack, type Stack } from '../helpers/stack';
import { fileAt } from '../helpers/git';

/**
 * Recipes pinned per run: the API resolves a snapshot of every recipe when it starts a run, the
 * run's input carries it, its memo names its version, and the run and its children (fix loop,
 * agent sessions) use it to the end, whatever happens to the files meanwhile. The stack reads a
 * recipes directory of this test's own (TARMAC_RECIPES_DIR), which the test edits mid-run.
 */

/** The gate wants a FIXED file; while it is missing the suite takes a few seconds, then fails. */
const check = 'test -f FIXED && exit 0; sleep 4; echo "FIXED is missing"; exit 3\n';

function redRepo(gateExtra: Record<string, unknown> = {}) {
  return createFixtureRepo({
    base: { 'check.sh': check, '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], gateExtra) },
    branches: [{ name: 'feature/f', commits: [{ message: 'a feature without the fix', files: { 'feature.txt': 'f\n' } }] }],
  });
}

describe('recipes pinned per run: an edit mid-run changes later runs, never the one under way', () => {
  let stack: Stack;
  let recipesDir: string;
  const recipe = (file: string) => JSON.parse(readFileSync(join(recipesDir, file), 'utf8')) as Record<string, any>;
  const writeRecipe = (file: string, data: unknown) => writeFileSync(join(recipesDir, file), `${JSON.stringify(data, null, 2)}\n`);

  before(async () => {
    recipesDir = mkdtempSync(join(tmpdir(), 'tarmac-test-recipes-'));
    cpSync(defaultRecipesDir, recipesDir, { recursive: true });
    // The default ladder is one scripted fixer; which scenario it names shows which recipe a run used.
    writeRecipe('ladder.json', { version: 1, ladder: ['script#fixer:pinned-old'] });
    writeRecipe('limits.json', { ...recipe('limits.json'), landing: { maxFixupRounds: 1 } });
    stack = await startStack({ recipesDir });
    stack.scriptScenario('pinned-old', { edits: [{ file: 'FIXED', replace: 'old\n' }] });
    stack.scriptScenario('pinned-new', { edits: [{ file: 'FIXED', replace: 'new\n' }] });
  });
  after(async () => {
    await stack?.stop();
    if (recipesDir) rmSync(recipesDir, { recursive: true, force: true });
  });

  /** The input a workflow was started with (the first event of its history). */
  async function inputOf(workflowId: string): Promise<{ recipes?: { version: string; ladder: string[] } }> {
    const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
    return defaultPayloadConverter.fromPayload(history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!);
  }
  const memoOf = async (workflowId: string) => (await stack.client.workflow.getHandle(workflowId).describe()).memo ?? {};
  const land = async (url: string) => {
    const created = await stack.api('POST', '/v1/landings', { repo: url, branches: ['feature/f'], target: 'main' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body.id as string;
  };

  it('a landing keeps the ladder and the fixup limit it started with; landings started after the edit get the new ones', async () => {
    const before = loadRecipes(recipesDir).version;
    assert.equal((await stack.api('GET', '/v1/recipes')).body.version, before, 'the API reads the stack’s recipes directory');
    const first = redRepo();
    const pinned = await land(first.url);

    // Edit while the run's gate is still red and slow: the default fixer and the landing's fixup limit.
    writeRecipe('ladder.json', { version: 1, ladder: ['script#fixer:pinned-new'] });
    writeRecipe('limits.json', { ...recipe('limits.json'), landing: { maxFixupRounds: 0 } });
    const edited = loadRecipes(recipesDir).version;
    assert.notEqual(edited, before);
    assert.equal((await stack.api('GET', '/v1/recipes')).body.version, edited);
    const during = await stack.api('GET', `/v1/landings/${pinned}`);
    assert.ok(!during.body.steps.some((step: { name: string }) => step.name.startsWith('fix.loop')), 'the edit came before the run reached its fixup round');

    // Two runs started after the edit: one whose gate file says nothing about fixups (the recipe's
    // new default, 0, applies), one whose gate file allows a round (its fixer is the new ladder's).
    const silent = await land(redRepo().url);
    const allowing = redRepo({ fixup: { maxRounds: 1 } });
    const allowed = await land(allowing.url);

    const old = (await landingFinished(stack, pinned)).outcome;
    assert.equal(old.status, 'landed', old.summary);
    assert.equal(old.fixLoops.length, 1, 'the fixup round its recipes allowed (the live file says 0 now)');
    assert.deepEqual(
      old.sessions.map((entry: { harnessModel: string }) => entry.harnessModel),
      ['script#fixer:pinned-old'],
      'the fixer of the ladder it started with (the live file names another)',
    );
    assert.equal(fileAt(first.path, 'main', 'FIXED'), 'old\n');
    // The memo names the snapshot's version, and the snapshot went down to the fix loop and its session.
    assert.equal((await memoOf(pinned)).recipeVersion, before);
    for (const workflowId of [pinned, `${pinned}.fixup-1`, `${pinned}.fixup-1-implementer-1`]) {
      assert.equal((await inputOf(workflowId)).recipes?.version, before, `${workflowId} carries the snapshot the landing started with`);
    }

    const none = (await landingFinished(stack, silent)).outcome;
    assert.equal(none.status, 'gate-failed', none.summary);
    assert.equal(none.fixLoops, undefined, "the new recipe's default: no fixup round");
    assert.equal((await memoOf(silent)).recipeVersion, edited);
    assert.equal((await inputOf(silent)).recipes?.version, edited);

    const fresh = (await landingFinished(stack, allowed)).outcome;
    assert.equal(fresh.status, 'landed', fresh.summary);
    assert.deepEqual(
      fresh.sessions.map((entry: { harnessModel: string }) => entry.harnessModel),
      ['script#fixer:pinned-new'],
    );
    assert.equal(fileAt(allowing.path, 'main', 'FIXED'), 'new\n');
    assert.equal((await memoOf(allowed)).recipeVersion, edited);
  });
});
