import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  agentAvailability,
  availabilityReport,
  defaultsNotice,
  namedAgentAvailability,
  panelReadiness,
  runnableLadder,
  type AvailabilityFacts,
  type HostAgents,
} from '../../core/agent-availability';
import type { ModelProvider } from '../../core/model-pricing';

const harnesses = {
  script: { image: 'tarmac/agent-script:bookworm', adapter: 'script' as const, models: ['fixer'] },
  'claude-code': { image: 'tarmac/agent-claude-code:1', adapter: 'claude-code' as const, models: ['claude-sonnet-4-5'] },
  codex: { image: 'tarmac/agent-codex:1', adapter: 'codex' as const, models: ['gpt-5'] },
};
const facts = (images: string[], providers: ModelProvider[]): AvailabilityFacts => ({ images: new Set(images), providers: new Set(providers) });

describe('agentAvailability', () => {
  const table: { name: string; spec: string; facts: AvailabilityFacts; expected: ReturnType<typeof agentAvailability> }[] = [
    { name: 'script needs its image only', spec: 'script#fixer', facts: facts(['tarmac/agent-script:bookworm'], []), expected: { ok: true } },
    {
      name: 'script without its image',
      spec: 'script#fixer',
      facts: facts([], ['anthropic']),
      expected: {
        ok: false,
        missing: [{ kind: 'image', name: 'tarmac/agent-script:bookworm' }],
        reason: 'script#fixer cannot run: image tarmac/agent-script:bookworm is not built',
      },
    },
    {
      name: 'claude with image and a way to Anthropic',
      spec: 'claude-code#claude-sonnet-4-5',
      facts: facts(['tarmac/agent-claude-code:1'], ['anthropic']),
      expected: { ok: true },
    },
    {
      name: 'claude without a key names the key',
      spec: 'claude-code#claude-sonnet-4-5',
      facts: facts(['tarmac/agent-claude-code:1'], ['openai']),
      expected: {
        ok: false,
        missing: [{ kind: 'key', name: 'ANTHROPIC_API_KEY' }],
        reason: 'claude-code#claude-sonnet-4-5 cannot run: key ANTHROPIC_API_KEY is not set',
      },
    },
    {
      name: 'codex with neither names both',
      spec: 'codex#gpt-5',
      facts: facts([], []),
      expected: {
        ok: false,
        missing: [
          { kind: 'image', name: 'tarmac/agent-codex:1' },
          { kind: 'key', name: 'OPENAI_API_KEY' },
        ],
        reason: 'codex#gpt-5 cannot run: image tarmac/agent-codex:1 is not built and key OPENAI_API_KEY is not set',
      },
    },
    { name: 'an unknown harness', spec: 'nope#x', facts: facts([], []), expected: { ok: false, missing: [], reason: 'nope#x is not a known harness#model' } },
  ];
  for (const { name, spec, facts: given, expected } of table) it(name, () => assert.deepEqual(agentAvailability(spec, harnesses, given), expected));

  it('a report covers every harness#model of the registry', () => {
    assert.deepEqual(Object.keys(availabilityReport(harnesses, facts([], []))), ['script#fixer', 'claude-code#claude-sonnet-4-5', 'codex#gpt-5']);
  });
});

describe('namedAgentAvailability (the API, from the workers’ reports)', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  const at = (secondsAgo: number) => new Date(now - secondsAgo * 1000).toISOString();
  const missingKey = {
    ok: false as const,
    missing: [{ kind: 'key' as const, name: 'ANTHROPIC_API_KEY' }],
    reason: 'claude-code#claude-sonnet-4-5 cannot run: key ANTHROPIC_API_KEY is not set',
  };
  const hostA: HostAgents = { hostId: 'a', at: at(10), agents: { 'claude-code#claude-sonnet-4-5': missingKey } };
  const hostB: HostAgents = { hostId: 'b', at: at(10), agents: { 'claude-code#claude-sonnet-4-5': { ok: true } } };
  const stale: HostAgents = { ...hostB, hostId: 'old', at: at(3600) };
  const spec = 'claude-code#claude-sonnet-4-5';
  it('runnable when one fresh host can run it', () => assert.deepEqual(namedAgentAvailability(spec, [hostA, hostB], now, 180_000), { ok: true }));
  it('refused, naming what is missing, when every fresh host says no', () =>
    assert.deepEqual(namedAgentAvailability(spec, [hostA, stale], now, 180_000), {
      ok: false,
      missing: missingKey.missing,
      reason: `${spec} cannot run on any worker (a): key ANTHROPIC_API_KEY is not set`,
    }));
  it('unknown (allowed) when no host reported recently', () => assert.deepEqual(namedAgentAvailability(spec, [stale], now, 180_000), { ok: true }));
  it('a model no fresh host offers', () =>
    assert.equal((namedAgentAvailability('codex#gpt-5', [hostA], now, 180_000) as { reason: string }).reason, 'codex#gpt-5 is not offered by any worker (a)'));
});

describe('runnableLadder (the default ladder of an install)', () => {
  const answers: Record<string, ReturnType<typeof agentAvailability>> = {
    'a#1': { ok: false, missing: [{ kind: 'image', name: 'img-a' }], reason: 'a#1 cannot run: image img-a is not built' },
    'b#2': { ok: true },
    'c#3': { ok: false, missing: [{ kind: 'key', name: 'K' }], reason: 'c#3 cannot run: key K is not set' },
  };
  it('keeps the rungs that can run, in order', () =>
    assert.deepEqual(
      runnableLadder(['a#1', 'b#2', 'c#3'], (spec) => answers[spec]!),
      { ladder: ['b#2'] },
    ));
  it('none → an empty ladder and every rung’s reason', () =>
    assert.deepEqual(
      runnableLadder(['a#1', 'c#3'], (spec) => answers[spec]!),
      {
        ladder: [],
        reason: 'no agent of the ladder can run on this worker: a#1 cannot run: image img-a is not built; c#3 cannot run: key K is not set',
      },
    ));
});

describe('panelReadiness (can a panel give a verdict here, before anything starts)', () => {
  // The shipped default panel's shape, on a machine with only ANTHROPIC_API_KEY set.
  const reviewers = ['claude-code#claude-sonnet-4-5', 'codex#gpt-5-codex', 'opencode#openai/gpt-5'];
  const onlyAnthropic = (spec: string): ReturnType<typeof agentAvailability> =>
    spec.startsWith('claude-code#')
      ? { ok: true }
      : spec.startsWith('codex#')
        ? { ok: false, missing: [{ kind: 'key', name: 'OPENAI_API_KEY' }], reason: `${spec} cannot run: key OPENAI_API_KEY is not set` }
        : {
            ok: false,
            missing: [
              { kind: 'image', name: 'tarmac/agent-opencode:1' },
              { kind: 'key', name: 'OPENAI_API_KEY' },
            ],
            reason: `${spec} cannot run: image tarmac/agent-opencode:1 is not built and key OPENAI_API_KEY is not set`,
          };
  const missingHere = [
    { kind: 'key', name: 'OPENAI_API_KEY' },
    { kind: 'image', name: 'tarmac/agent-opencode:1' },
  ];
  const table: { name: string; panel: { reviewers: string[]; quorum: number; unavailable?: 'incomplete' | 'skip' }; quorum?: number; expected: unknown }[] = [
    {
      name: 'every reviewer counts (default): refused, naming each reviewer and what it needs',
      panel: { reviewers, quorum: 2 },
      expected: {
        ok: false,
        unavailable: ['codex#gpt-5-codex', 'opencode#openai/gpt-5'],
        missing: missingHere,
        reason:
          'the default panel cannot run here: codex#gpt-5-codex needs OPENAI_API_KEY, opencode#openai/gpt-5 needs image tarmac/agent-opencode:1 and OPENAI_API_KEY; set what is missing, or mark the panel "unavailable": "skip" in recipes/panels.json',
      },
    },
    {
      name: '"skip" with a quorum the rest can meet: it runs, and says whom it skips and why',
      panel: { reviewers, quorum: 1, unavailable: 'skip' },
      expected: {
        ok: true,
        skipped: [
          { harnessModel: 'codex#gpt-5-codex', reason: 'codex#gpt-5-codex cannot run: key OPENAI_API_KEY is not set' },
          {
            harnessModel: 'opencode#openai/gpt-5',
            reason: 'opencode#openai/gpt-5 cannot run: image tarmac/agent-opencode:1 is not built and key OPENAI_API_KEY is not set',
          },
        ],
      },
    },
    {
      name: '"skip" with a quorum more than the reviewers left: refused, naming why',
      panel: { reviewers, quorum: 2, unavailable: 'skip' },
      expected: {
        ok: false,
        unavailable: ['codex#gpt-5-codex', 'opencode#openai/gpt-5'],
        missing: missingHere,
        reason:
          'the default panel cannot run here: its quorum is 2 but only 1 of its 3 reviewers can run (codex#gpt-5-codex needs OPENAI_API_KEY, opencode#openai/gpt-5 needs image tarmac/agent-opencode:1 and OPENAI_API_KEY)',
      },
    },
    {
      name: "the gate file's quorum wins over the panel's",
      panel: { reviewers, quorum: 2, unavailable: 'skip' },
      quorum: 1,
      expected: { ok: true },
    },
    {
      name: 'every reviewer can run: nothing skipped',
      panel: { reviewers: ['claude-code#claude-sonnet-4-5'], quorum: 1 },
      expected: { ok: true, skipped: [] },
    },
  ];
  for (const { name, panel, quorum, expected } of table)
    it(name, () => {
      const answer = panelReadiness('default', panel, onlyAnthropic, quorum);
      if ((expected as { skipped?: unknown }).skipped === undefined && answer.ok) assert.equal(answer.ok, (expected as { ok: boolean }).ok);
      else assert.deepEqual(answer, expected);
    });

  it('defaultsNotice: one line when the default panel cannot run; none when the defaults can', () => {
    const recipes = { ladder: ['codex#gpt-5-codex', 'claude-code#claude-haiku-4-5'], panels: { default: { reviewers, quorum: 2 } } };
    assert.equal(
      defaultsNotice(recipes, onlyAnthropic),
      'the default panel cannot run here: codex#gpt-5-codex needs OPENAI_API_KEY, opencode#openai/gpt-5 needs image tarmac/agent-opencode:1 and OPENAI_API_KEY; set what is missing, or mark the panel "unavailable": "skip" in recipes/panels.json',
    );
    assert.equal(defaultsNotice({ ...recipes, panels: { default: { reviewers, quorum: 1, unavailable: 'skip' } } }, onlyAnthropic), undefined);
  });

  it('defaultsNotice: no key at all → the panel and the ladder, on one line', () => {
    const nothing = (spec: string): ReturnType<typeof agentAvailability> => ({
      ok: false,
      missing: [{ kind: 'key', name: spec.startsWith('claude') ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY' }],
      reason: `${spec} cannot run`,
    });
    const notice = defaultsNotice(
      { ladder: ['claude-code#claude-haiku-4-5'], panels: { default: { reviewers: ['claude-code#claude-sonnet-4-5'], quorum: 1 } } },
      nothing,
    );
    assert.equal(
      notice,
      'the default panel cannot run here: claude-code#claude-sonnet-4-5 needs ANTHROPIC_API_KEY; set what is missing, or mark the panel "unavailable": "skip" in recipes/panels.json. And the default ladder cannot run here: claude-code#claude-haiku-4-5 needs ANTHROPIC_API_KEY; set a provider\'s key',
    );
    assert.ok(!String(notice).includes('\n'), 'one line');
  });
});
