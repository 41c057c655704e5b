/**
 * A review panel of two real CLIs, one per provider protocol (issue 12): Claude Code through an
 * Anthropic-protocol model gateway and Codex through an OpenAI-protocol one, each upstream a
 * scripted endpoint. Each reviewer reads through the tool gateway and ends with its findings in a
 * tarmac-result block; the findings are parsed and each report is sealed in the findings cache.
 * The same tree again (another repository with identical content): cache hit, 0 containers, 0
 * model requests.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
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

const panel = loadRecipes().panels.pair!;
const images = panel.reviewers.map((spec) => loadRecipes().harnesses[spec.split('#')[0]!]!.image);
const skip = skipUnlessBuilt(images);

const block = (findings: unknown[]) => `\n\`\`\`tarmac-result\n${JSON.stringify({ findings })}\n\`\`\``;
const claudeFinding = { file: 'src/sum.js', line: 1, severity: 'major', message: 'sum of nothing should be 0, not undefined' };

const claudeScript: Script = {
  version: 1,
  conversations: [
    {
      name: 'claude-reviewer',
      turns: [
        { toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'src/sum.js' } }], usage: { inputTokens: 900, outputTokens: 40 } },
        { text: `One issue in src/sum.js.${block([claudeFinding])}`, usage: { inputTokens: 1100, outputTokens: 80 } },
      ],
    },
  ],
};
const codexScript: Script = {
  version: 1,
  conversations: [
    {
      name: 'codex-reviewer',
      turns: [
        { toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'src/sum.js' } }], usage: { inputTokens: 700, outputTokens: 30 } },
        { text: `Looks fine.${block([])}`, usage: { inputTokens: 800, outputTokens: 50 } },
      ],
    },
  ],
};

describe('real agents: a review panel of Claude Code and Codex', { skip, timeout: 600_000 }, () => {
  let stack: Stack;
  let anthropic: ScriptedModel;
  let openai: ScriptedModel;
  before(async () => {
    anthropic = await startScriptedModel({ script: claudeScript, port: 0 });
    openai = await startScriptedModel({ script: codexScript, port: 0 });
    stack = await startStack({
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
    const created = await stack.api('POST', '/v1/reviews', { repo: repoUrl, base: 'main', head: 'feature/sum', panel: 'pair' });
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
    assert.deepEqual(
      verdict.findings.map((f: { file: string; line: number; severity: string; message: string }) => [f.file, f.line, f.severity, f.message]),
      [[claudeFinding.file, claudeFinding.line, claudeFinding.severity, claudeFinding.message]],
    );
    // Each protocol's endpoint saw its reviewer's two turns.
    assert.deepEqual(
      anthropic.requests.filter((r) => r.outcome !== 'side').map((r) => [r.path, r.turn]),
      [
        ['/v1/messages', 0],
        ['/v1/messages', 1],
      ],
    );
    assert.deepEqual(
      openai.requests.filter((r) => r.outcome !== 'side').map((r) => [r.path, r.turn]),
      [
        ['/v1/responses', 0],
        ['/v1/responses', 1],
      ],
    );

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
      if (spec.startsWith('claude-code')) assert.match(sealed, /sum of nothing should be 0/);
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
