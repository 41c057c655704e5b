/**
 * A review panel of the four real CLIs (issues 12 and 26): Claude Code and aider through an
 * Anthropic-protocol model gateway, Codex and opencode through an OpenAI-protocol one, each upstream
 * a scripted endpoint. Each reviewer reads (through the tool gateway; aider, which has no MCP client,
 * is given the files) and ends with its findings in a tarmac-result block; the findings are parsed
 * and each report is sealed in the findings cache. The same tree again (another repository with
 * identical content): cache hit, 0 containers, 0 model requests.
 */
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import { loadRecipes } from '../../core/node/recipes';
import { createFixtureRepo } from '../../infra/fixture-repo';
import type { Script } from '../../infra/scripted-model/script';
import { startScriptedModel, type ScriptedModel } from '../../infra/scripted-model/server';
import { findingsCachePath } from '../../policies/findings-cache-key';
import { containersCreated, startStack, type Stack } from '../helpers/stack';
import { skipUnlessBuilt } from '../helpers/agent-cli';
import { runResult } from '../helpers/runs';

/** The repository's recipes and a panel of the four real CLIs, two per provider protocol. */
const reviewers = ['claude-code#claude-sonnet-4-5', 'aider#claude-sonnet-4-5', 'codex#gpt-5', 'opencode#openai/gpt-5'];
const recipesDir = mkdtempSync(join(tmpdir(), 'tarmac-test-recipes-'));
cpSync(join(__dirname, '../../recipes'), recipesDir, { recursive: true });
const panelsFile = join(recipesDir, 'panels.json');
const panels = JSON.parse(readFileSync(panelsFile, 'utf8')) as { panels: Record<string, Record<string, unknown>> };
panels.panels.four = { ...panels.panels.pair, description: 'The four real CLIs (tests).', reviewers, quorum: 4 };
writeFileSync(panelsFile, JSON.stringify(panels, null, 2));
const recipes = loadRecipes(recipesDir);
const panel = recipes.panels.four!;
const images = panel.reviewers.map((spec) => recipes.harnesses[spec.split('#')[0]!]!.image);
const skip = skipUnlessBuilt(images);

const block = (findings: unknown[]) => `\n\`\`\`tarmac-result\n${JSON.stringify({ findings })}\n\`\`\``;
const claudeFinding = { file: 'src/sum.js', line: 1, severity: 'major', message: 'sum of nothing should be 0, not undefined' };
const opencodeFinding = { file: 'src/sum.js', line: 1, severity: 'minor', message: 'name the accumulator' };
const aiderFinding = { file: 'src/sum.js', line: 1, severity: 'info', message: 'an initial value makes the intent plain' };

/**
 * Aider's opening request already holds a model turn of its own making (its "Ok." to the files added
 * to the chat, read-only for a reviewer): the endpoint counts it, so its answer is turn 1.
 */
const aiderPreamble = 1;
const anthropicScript: Script = {
  version: 1,
  conversations: [
    {
      name: 'claude-reviewer',
      match: 'Claude Code',
      turns: [
        { toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'src/sum.js' } }], usage: { inputTokens: 900, outputTokens: 40 } },
        { text: `One issue in src/sum.js.${block([claudeFinding])}`, usage: { inputTokens: 1100, outputTokens: 80 } },
      ],
    },
    {
      name: 'aider-reviewer',
      turns: [
        ...Array.from({ length: aiderPreamble }, () => ({ text: 'never asked', usage: { inputTokens: 0, outputTokens: 0 } })),
        { text: `A note on src/sum.js.${block([aiderFinding])}`, usage: { inputTokens: 1300, outputTokens: 60 } },
      ],
    },
  ],
  // Aider declares no tools: its requests are a conversation, not side calls.
  sideCalls: { detect: 'never' },
};
const openaiScript: Script = {
  version: 1,
  conversations: [
    {
      name: 'opencode-reviewer',
      match: 'named `tarmac_*`',
      turns: [
        { toolCalls: [{ name: 'tarmac_read_file', input: { path: 'src/sum.js' } }], usage: { inputTokens: 600, outputTokens: 20 } },
        { text: `A small one.${block([opencodeFinding])}`, usage: { inputTokens: 650, outputTokens: 45 } },
      ],
    },
    {
      name: 'codex-reviewer',
      turns: [
        { toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'src/sum.js' } }], usage: { inputTokens: 700, outputTokens: 30 } },
        { text: `Looks fine.${block([])}`, usage: { inputTokens: 800, outputTokens: 50 } },
      ],
    },
  ],
};

describe('real agents: a review panel of Claude Code, aider, Codex and opencode', { skip, timeout: 600_000 }, () => {
  let stack: Stack;
  let anthropic: ScriptedModel;
  let openai: ScriptedModel;
  before(async () => {
    anthropic = await startScriptedModel({ script: anthropicScript, port: 0 });
    openai = await startScriptedModel({ script: openaiScript, port: 0 });
    stack = await startStack({
      recipesDir,
      workerEnv: {
        TARMAC_MODEL_UPSTREAM_ANTHROPIC: anthropic.url!,
        TARMAC_MODEL_UPSTREAM_OPENAI: openai.url!,
        ANTHROPIC_API_KEY: 'sk-ant-test',
        OPENAI_API_KEY: 'sk-openai-test',
      },
    });
  });
  after(async () => {
    await stack?.stop();
    await anthropic?.close();
    await openai?.close();
  });

  /** A repository whose trees are the same every time it is made. */
  const reviewed = () =>
    createFixtureRepo({
      base: { 'README.md': 'sums\n' },
      branches: [
        { name: 'feature/sum', commits: [{ message: 'add sum', files: { 'src/sum.js': 'export const sum = (xs) => xs.reduce((a, b) => a + b);\n' } }] },
      ],
    });

  async function review(repoUrl: string) {
    const created = await stack.api('POST', '/v1/reviews', { repo: repoUrl, base: 'main', head: 'feature/sum', panel: 'four' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return { id: created.body.id as string, verdict: await runResult(stack, created.body.id, 'the review', 300_000) };
  }

  it('findings parsed and sealed per reviewer; the same tree again → hit, 0 containers, 0 model requests', async () => {
    const first = await review(reviewed().url);
    const verdict = first.verdict;
    assert.equal(verdict.cache, 'miss');
    assert.deepEqual(
      verdict.reviewers.map((r: { harnessModel: string; source: string; status: string }) => [r.harnessModel, r.source, r.status]),
      panel.reviewers.map((spec) => [spec, 'session', 'delivered']),
      JSON.stringify(verdict),
    );
    assert.equal(verdict.status, 'approved', verdict.summary);
    const findings = (list: { file: string; line: number; severity: string; message: string }[]) =>
      list.map((f) => [f.file, f.line, f.severity, f.message].join(' ')).sort();
    assert.deepEqual(findings(verdict.findings), findings([claudeFinding, aiderFinding, opencodeFinding]));
    // Each reviewer's conversation at its endpoint: every scripted turn, in order, on its protocol.
    const turns = (endpoint: ScriptedModel, name: string) => endpoint.requests.filter((r) => r.conversation === name).map((r) => [r.path, r.outcome, r.turn]);
    const seenAll = () => JSON.stringify([...anthropic.requests, ...openai.requests].map((r) => [r.path, r.conversation, r.turn, r.outcome, r.message ?? '']));
    assert.deepEqual(
      turns(anthropic, 'claude-reviewer'),
      [
        ['/v1/messages', 'turn', 0],
        ['/v1/messages', 'turn', 1],
      ],
      seenAll(),
    );
    assert.deepEqual(turns(anthropic, 'aider-reviewer'), [['/v1/messages', 'turn', aiderPreamble]], seenAll());
    assert.deepEqual(
      turns(openai, 'codex-reviewer'),
      [
        ['/v1/responses', 'turn', 0],
        ['/v1/responses', 'turn', 1],
      ],
      seenAll(),
    );
    assert.deepEqual(
      turns(openai, 'opencode-reviewer'),
      [
        ['/v1/responses', 'turn', 0],
        ['/v1/responses', 'turn', 1],
      ],
      seenAll(),
    );
    assert.equal(anthropic.requests.length + openai.requests.length, 7, seenAll());

    // Sealed: one report per reviewer, keyed by the tree, with the parsed findings.
    for (const spec of panel.reviewers) {
      const file = join(
        stack.dataDir,
        'cache',
        'reviews',
        findingsCachePath({ treeSha: verdict.treeSha, harnessModel: spec, promptVersion: panel.promptVersion }),
      );
      assert.ok(existsSync(file), `${spec} sealed`);
      const sealed = readFileSync(file, 'utf8');
      const own = { 'claude-code': claudeFinding, aider: aiderFinding, opencode: opencodeFinding }[spec.split('#')[0]!];
      if (own) assert.ok(sealed.includes(own.message), `${spec}'s report holds its finding`);
    }

    const since = Math.floor(Date.now() / 1000);
    const seen = [anthropic.requests.length, openai.requests.length];
    const second = await review(reviewed().url);
    assert.equal(second.verdict.treeSha, verdict.treeSha, 'an identical tree');
    assert.equal(second.verdict.cache, 'hit');
    assert.equal(second.verdict.sessionsStarted, 0);
    assert.deepEqual(second.verdict.findings, verdict.findings);
    assert.equal(
      await containersCreated(new Docker({ socketPath: stack.config.dockerSocket }), since, `tarmac.run=${second.id}`),
      0,
      'no container for the cached panel',
    );
    assert.deepEqual([anthropic.requests.length, openai.requests.length], seen, 'no model request either');
  });
});
