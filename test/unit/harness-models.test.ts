import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkHarnessModel, editDistance, registeredHarnessModel } from '../../core/harness-models';
import { loadRecipes, parseRecipes, RecipeError } from '../../core/node/recipes';

const registry = {
  'claude-code': { models: ['claude-haiku-4-5', 'claude-sonnet-4-5'] },
  codex: { models: ['gpt-5-codex', 'gpt-5'] },
  script: { models: ['fixer', 'slow'], adapter: 'script' },
};

describe('checkHarnessModel (dispatch validation)', () => {
  const table = [
    { input: 'claude-code#claude-sonnet-4-5', ok: true, message: undefined },
    { input: 'claude-code#falbe-5', ok: false, message: /unknown model "falbe-5" of harness "claude-code".*nearest known: claude-code#/ },
    { input: 'claude-code#claude-sonet-4-5', ok: false, message: /nearest known: claude-code#claude-sonnet-4-5/ },
    { input: 'claud-code#claude-sonnet-4-5', ok: false, message: /unknown harness "claud-code".*claude-code/ },
    { input: 'gpt-5', ok: false, message: /not of the form harness#model/ },
    { input: 'codex#', ok: false, message: /not of the form/ },
    // A script model may name a scenario of the worker's; the behaviour is what the registry knows.
    { input: 'script#fixer', ok: true, message: undefined },
    { input: 'script#fixer:write-fixed', ok: true, message: undefined },
    { input: 'script#fixr:write-fixed', ok: false, message: /unknown model "fixr" of harness "script".*nearest known: script#fixer/ },
    {
      input: 'script#fixer:../etc/x',
      ok: false,
      message: /scenario "\.\.\/etc\/x" must be lowercase letters, digits and "-".* in "script#fixer:\.\.\/etc\/x"/,
    },
    { input: 'script#fixer:Write', ok: false, message: /scenario "Write" must be lowercase/ },
    { input: 'script#fixer:', ok: false, message: /scenario "" must be/ },
    { input: 'claude-code#claude-sonnet-4-5:write-fixed', ok: false, message: /unknown model "claude-sonnet-4-5:write-fixed" of harness "claude-code"/ },
  ];
  for (const { input, ok, message } of table) {
    it(input, () => {
      const check = checkHarnessModel(input, registry);
      assert.equal(check.ok, ok);
      if (!check.ok && message) assert.match(check.message, message);
    });
  }
  it('a script model is registered (and reported by workers) without its scenario', () => {
    assert.equal(registeredHarnessModel('script#fixer:write-fixed', registry), 'script#fixer');
    assert.deepEqual(checkHarnessModel('script#slow:wait-4s', registry), { ok: true, harness: 'script', model: 'slow', scenario: 'wait-4s' });
    assert.equal(registeredHarnessModel('codex#gpt-5', registry), 'codex#gpt-5');
  });
  it('edit distance', () => {
    assert.equal(editDistance('kitten', 'sitting'), 3);
    assert.equal(editDistance('', 'abc'), 3);
    assert.equal(editDistance('same', 'same'), 0);
  });
});

describe('recipes', () => {
  it('the shipped recipes load and carry a content version', () => {
    const recipes = loadRecipes();
    assert.match(recipes.version, /^[0-9a-f]{12}$/);
    assert.ok(recipes.ladder.length >= 2);
    assert.ok(recipes.harnesses.script, 'the script harness is registered');
  });
  const valid = {
    harnesses: JSON.stringify({ version: 1, harnesses: { script: { image: 'i', adapter: 'script', models: ['reviewer'], secrets: [] } } }),
    ladder: JSON.stringify({ version: 1, ladder: ['script#reviewer'] }),
    limits: JSON.stringify({
      version: 1,
      session: { timeout: '1m', memoryMb: 256, cpus: 1, pids: 64, network: 'none', maxRespawns: 1, maxAttempts: 4 },
      budget: { tokens: 10, costUsd: 1, wall: '1h', sessions: 3, onExhausted: 'pause' },
      landing: { maxFixupRounds: 1 },
    }),
    panels: JSON.stringify({ version: 1, panels: {} }),
    playbooks: JSON.stringify({
      version: 1,
      playbooks: [{ id: 'make-target-typo', signature: "No rule to make target '(?<target>[a-z]+)'", kind: 'make-target-typo' }],
      grounding: { groundedCommands: ['make up'], groundingFiles: ['Makefile'] },
      limits: { maxRepairs: 2, maxToolIterations: 40, sessionTimeout: '20m' },
    }),
    pricing: JSON.stringify({ version: 1, models: { 'claude-haiku-4-5': { provider: 'anthropic', input: 1, output: 5, taken: '2025-11-03' } } }),
  };
  const panel = (extra: Record<string, unknown>) =>
    JSON.stringify({
      version: 1,
      panels: { pair: { reviewers: ['script#reviewer'], quorum: 1, blockingSeverities: ['blocking'], promptVersion: 'v1', prompt: 'p', ...extra } },
    });
  const broken = [
    {
      name: 'ladder names an unknown model',
      texts: { ...valid, ladder: JSON.stringify({ version: 1, ladder: ['script#reviewr'] }) },
      message: /^recipes\/ladder\.json: ladder\[0\] unknown model "reviewr".*script#reviewer/,
    },
    {
      name: 'harness with an unknown adapter',
      texts: { ...valid, harnesses: valid.harnesses.replace('"adapter":"script"', '"adapter":"cursor"') },
      message: /^recipes\/harnesses\.json: harnesses\.script\.adapter/,
    },
    {
      name: 'limits with a bad timeout',
      texts: { ...valid, limits: valid.limits.replace('"1m"', '"a minute"') },
      message: /^recipes\/limits\.json: session\.timeout/,
    },
    { name: 'not JSON', texts: { ...valid, ladder: '{' }, message: /^recipes\/ladder\.json: \(root\) is not valid JSON/ },
    {
      name: 'a session on the host network',
      texts: { ...valid, limits: valid.limits.replace('"network":"none"', '"network":"host"') },
      message: /^recipes\/limits\.json: session\.network expected 'none'/,
    },
    {
      name: 'playbooks without a tool-call limit',
      texts: { ...valid, playbooks: valid.playbooks.replace('"maxToolIterations":40,', '') },
      message: /^recipes\/playbooks\.json: limits\.maxToolIterations/,
    },
    {
      name: 'a flaky suite with an unknown action',
      texts: { ...valid, limits: valid.limits.replace('"landing":', '"gate":{"flaky":"ignore"},"landing":') },
      message: /^recipes\/limits\.json: gate\.flaky must be one of "retry", "quarantine", "fail"$/,
    },
    {
      name: 'a pre-existing red with the flaky vocabulary',
      texts: { ...valid, limits: valid.limits.replace('"landing":', '"gate":{"preExisting":"retry"},"landing":') },
      message: /^recipes\/limits\.json: gate\.preExisting must be one of "allow", "quarantine", "fail"$/,
    },
    {
      name: 'a quarantine shorter than a second',
      texts: { ...valid, limits: valid.limits.replace('"landing":', '"gate":{"quarantineFor":"500ms"},"landing":') },
      message: /^recipes\/limits\.json: gate\.quarantineFor is 500ms; a quarantine lasts at least 1s$/,
    },
    {
      name: 'a gate limit the schema does not know',
      texts: { ...valid, limits: valid.limits.replace('"landing":', '"gate":{"flakey":"retry"},"landing":') },
      message: /^recipes\/limits\.json: gate\.flakey unexpected property/,
    },
    {
      name: 'a panel whose rule for reviewers that cannot run is not a known word',
      texts: { ...valid, panels: panel({ unavailable: 'ignore' }) },
      message: /^recipes\/panels\.json: panels\.pair\.unavailable must be one of "incomplete", "skip"$/,
    },
    {
      name: 'a price that does not say when it was taken',
      texts: { ...valid, pricing: valid.pricing.replace(',"taken":"2025-11-03"', '') },
      message: /^recipes\/pricing\.json: models\.claude-haiku-4-5\.taken expected required property/,
    },
    {
      name: 'a price that is not a number',
      texts: { ...valid, pricing: valid.pricing.replace('"input":1', '"input":"cheap"') },
      message: /^recipes\/pricing\.json: models\.claude-haiku-4-5\.input/,
    },
  ];
  it('the version covers every recipe file: a change to any one is a new version', () => {
    const base = parseRecipes(valid).version;
    const edits: Record<keyof typeof valid, string> = {
      harnesses: valid.harnesses.replace('"image":"i"', '"image":"j"'),
      ladder: valid.ladder.replace('"version":1', '"version":1,"description":"edited"'),
      limits: valid.limits.replace('"maxFixupRounds":1', '"maxFixupRounds":2'),
      panels: valid.panels.replace('"version":1', '"version":1 '),
      playbooks: valid.playbooks.replace('"maxRepairs":2', '"maxRepairs":3'),
      pricing: valid.pricing.replace('"output":5', '"output":6'),
    };
    const versions = Object.entries(edits).map(([file, text]) => parseRecipes({ ...valid, [file]: text }).version);
    for (const [index, version] of versions.entries()) assert.notEqual(version, base, `an edit of ${Object.keys(edits)[index]} changes the version`);
    assert.equal(new Set(versions).size, versions.length, 'every edit gives a version of its own');
    assert.equal(parseRecipes({ ...valid }).version, base, 'the same texts, the same version');
  });
  it('a snapshot carries every recipe, without the descriptions meant for people', () => {
    const described = valid.harnesses.replace('"image":"i"', '"description":"for people","image":"i"');
    const snapshot = parseRecipes({ ...valid, harnesses: described });
    assert.deepEqual(Object.keys(snapshot).sort(), ['harnesses', 'ladder', 'limits', 'panels', 'playbooks', 'pricing', 'version']);
    assert.equal('description' in snapshot.harnesses.script!, false);
    assert.equal(snapshot.playbooks.limits.maxToolIterations, 40);
    assert.equal(snapshot.pricing['claude-haiku-4-5']!.output, 5);
  });
  it('a recipes directory without one of the files is refused, naming the file', () => {
    assert.throws(
      () => loadRecipes('/nonexistent-recipes-dir'),
      (error: unknown) => error instanceof RecipeError && /^recipes\/harnesses\.json: \(file\) cannot be read/.test(error.message),
    );
  });
  it('a valid set parses', () => assert.deepEqual(parseRecipes(valid).ladder, ['script#reviewer']));
  it('takes a panel that skips the reviewers that cannot run here, and keeps the rule in the snapshot', () =>
    assert.equal(parseRecipes({ ...valid, panels: panel({ unavailable: 'skip' }) }).panels.pair!.unavailable, 'skip'));
  for (const { name, texts, message } of broken) {
    it(`refuses: ${name}, naming file and field`, () => {
      assert.throws(
        () => parseRecipes(texts),
        (error: unknown) => error instanceof RecipeError && message.test(error.message),
      );
    });
  }
});
