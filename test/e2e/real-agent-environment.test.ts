/**
 * Issue 24's agent acceptance: the real Claude Code CLI (in its real image, network none, its model
 * the scripted endpoint behind the worker's model gateway) runs the repository's `npm test` through
 * the tool gateway's `run_command` in a landing's fix loop, and the command runs in the repository's
 * environment — built from the real npm registry through the worker's egress gateway (its host from
 * the machine's npm configuration, in TARMAC_EGRESS_ALLOW as an operator would set it) — so the
 * transcript shows the tests running with their dependency. The real stack: Temporal, the worker,
 * dockerd, git.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadRecipes } from '../../core/node/recipes';
import { createFixtureRepo, gateFile } from '../../infra/fixture-repo';
import type { Script } from '../../infra/scripted-model/script';
import { startScriptedModel, type ScriptedModel } from '../../infra/scripted-model/server';
import { skipUnlessBuilt } from '../helpers/agent-cli';
import { npmRegistry, npmLockfile } from '../helpers/registries';
import { containersCreated, landingFinished, startStack, type Stack } from '../helpers/stack';
import { fileAt, git } from '../helpers/git';

const image = loadRecipes().harnesses['claude-code']!.image;
const skip = skipUnlessBuilt([image]);
const agent = 'claude-code#claude-sonnet-4-5';

describe('real agent in an environment: Claude Code runs npm test through run_command in a fix loop, with the dependencies', { skip, timeout: 600_000 }, () => {
  const registry = npmRegistry();
  let stack: Stack;
  let endpoint: ScriptedModel;

  // The fixer runs the tests (red), reads, fixes, and commits once the tests pass — every command through the gateway.
  const script: Script = {
    version: 1,
    conversations: [
      {
        name: 'fixer',
        match: 'left-pad label: got',
        turns: [
          { toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: 'npm test' } }] },
          { toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'label.js' } }] },
          { toolCalls: [{ name: 'mcp__tarmac__edit_file', input: { path: 'label.js', find: "(text, 2, '-')", replace: "(text, 3, '-')" } }] },
          { toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: "npm test && git commit -qam 'label: pad to three again'" } }] },
          { text: 'label.js pads to three again; npm test passes.' },
        ].map((turn) => ({ ...turn, usage: { inputTokens: 800, outputTokens: 20 } })),
      },
    ],
  };

  before(async () => {
    endpoint = await startScriptedModel({ script, port: 0 });
    stack = await startStack({
      workerEnv: { TARMAC_MODEL_UPSTREAM_ANTHROPIC: endpoint.url!, ANTHROPIC_API_KEY: 'sk-test-environment', TARMAC_EGRESS_ALLOW: registry.host },
    });
  });
  after(async () => {
    await stack?.stop();
    await endpoint?.close();
  });

  it('red gate → fix loop → the agent runs the tests in the environment (red, then green) → landed; the transcript shows them', async () => {
    const pkg = `${JSON.stringify({ name: 'label', version: '1.0.0', private: true, scripts: { test: 'node test.js' }, dependencies: { 'left-pad': '1.3.0' } }, null, 2)}\n`;
    const lock = npmLockfile(pkg);
    const test = [
      "const label = require('./label');",
      "console.log('left-pad from', require.resolve('left-pad'));",
      "const got = label('x');",
      'console.log(`left-pad label: got [${got}] want [--x]`);',
      "process.exit(got === '--x' ? 0 : 1);",
      '',
    ].join('\n');
    const environment = { setup: [`npm ci --no-audit --no-fund --registry ${registry.url}`], inputs: ['package.json', 'package-lock.json'] };
    const repo = createFixtureRepo({
      base: {
        'package.json': pkg,
        'package-lock.json': lock,
        'label.js': "module.exports = (text) => require('left-pad')(text, 3, '-');\n",
        'test.js': test,
        '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['npm', 'test'] }], { environment, fixup: { maxRounds: 1 } }),
      },
      branches: [
        {
          name: 'feature/label',
          commits: [
            {
              message: 'label: pad to two, and a feature',
              files: { 'label.js': "module.exports = (text) => require('left-pad')(text, 2, '-');\n", 'feature.txt': 'feature\n' },
            },
          ],
        },
      ],
    });

    const since = Math.floor(Date.now() / 1000) - 1;
    const created = await stack.api('POST', '/v1/landings', {
      repo: repo.url,
      branches: ['feature/label'],
      target: 'main',
      agents: { fixer: agent, ladder: [agent] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    const view = await landingFinished(stack, id, 480_000);
    const outcome = view.outcome;
    const seen = endpoint.requests.map((request) => [request.outcome, request.turn, request.message ?? '']);
    assert.equal(outcome.status, 'landed', `${outcome.summary}\n${JSON.stringify(seen)}`);
    assert.equal(fileAt(repo.path, 'main', 'label.js'), "module.exports = (text) => require('left-pad')(text, 3, '-');\n");
    assert.equal(fileAt(repo.path, 'main', 'feature.txt'), 'feature\n');
    assert.equal(git(repo.path, 'ls-tree', '-r', '--name-only', 'main').includes('node_modules'), false, 'the environment was not committed');

    // The fix loop fixed it; its repro ran the suite in the environment too (the gate's log shows the dependency).
    const loop = await stack.client.workflow.getHandle(`${id}.fixup-1`).result();
    assert.deepEqual([loop.outcome, loop.reproCommand, loop.sessions.length], ['fixed', 'npm test', 1], loop.summary);
    assert.ok(
      outcome.environments.length >= 1 && outcome.environments.every((entry: { failed?: string }) => !entry.failed),
      JSON.stringify(outcome.environments),
    );

    // The agent's commands ran in a command container of the environment (and the CLI in its own image).
    assert.ok((await containersCreated(stack.docker, since, [`tarmac.run=${id}`, 'tarmac.role=command'])) >= 1, 'a command container was made for the fixer');
    const sessionDir = join(stack.dataDir, 'runs', id, 'sessions', loop.sessions[0].sessionId);
    const telemetry = readFileSync(join(sessionDir, 'gateway', 'telemetry.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { tool: string; command?: string; exitCode?: number });
    assert.deepEqual(
      telemetry.map((entry) => [entry.tool, entry.command ?? '', entry.exitCode ?? 'ok']),
      [
        ['run_command', 'npm test', 1],
        ['read_file', '', 'ok'],
        ['edit_file', '', 'ok'],
        ['run_command', "npm test && git commit -qam 'label: pad to three again'", 0],
      ],
    );

    // The transcript: the tool results the model saw are the repository's tests running with left-pad from the environment.
    const transcript = readFileSync(join(sessionDir, 'a1', 'model-gateway', 'transcript.jsonl'), 'utf8');
    const results = transcript
      .trim()
      .split('\n')
      .flatMap((line) => {
        const body = (JSON.parse(line) as { request?: { body?: { json?: { messages?: { content: unknown }[] } } } }).request?.body?.json;
        return (body?.messages ?? [])
          .flatMap((message) => (Array.isArray(message.content) ? (message.content as { type: string; content?: unknown }[]) : []))
          .filter((block) => block.type === 'tool_result');
      })
      // A tool result's content is its text, or a list of text blocks.
      .map((block) =>
        typeof block.content === 'string' ? block.content : ((block.content ?? []) as { text?: string }[]).map((part) => part.text ?? '').join(''),
      );
    const red = results.find((text) => text.includes('left-pad label: got [-x]'));
    const green = results.find((text) => text.includes('left-pad label: got [--x]'));
    assert.ok(red, `the red run is in the transcript: ${results.join('\n')}`);
    assert.ok(green, `the green run is in the transcript: ${results.join('\n')}`);
    for (const run of [red, green]) {
      assert.match(run, /> node test\.js/, "npm ran the repository's test script");
      // Node resolves the workspace's node_modules link to where it points: the environment's files.
      assert.match(run, /left-pad from \/tarmac\/env\/node_modules\/left-pad\/index\.js/, "the dependency came from the environment's node_modules");
    }
    assert.match(red, /^exit 1\n/);
    assert.match(green, /^exit 0\n/);
  });
});
