import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  agentAvailability,
  availabilityReport,
  namedAgentAvailability,
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
