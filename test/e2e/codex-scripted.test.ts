/**
 * The real Codex CLI (the pinned platform binary from scripts/fetch-agent-clis.sh) against the
 * scripted model endpoint over the Responses API, on the host: a shell command, an apply_patch edit
 * (a free-form custom tool call), a final answer; its JSONL events report exactly the scripted usage.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cachedAgentCli, pinnedAgentCli } from '../../infra/agent-clis';
import type { Script } from '../../infra/scripted-model/script';
import { startScriptedModel, type ScriptedModel } from '../../infra/scripted-model/server';
import { mcpRewriteScript, runWithStdin, writeMcpFixtureServer } from '../helpers/agent-cli';
import { commitFiles } from '../helpers/git';

const codex = cachedAgentCli('codex');
const pin = pinnedAgentCli('codex');
const skip = codex ? false : `Codex ${pin.version} is not in the cache (${pin.bin}); run \`bash scripts/fetch-agent-clis.sh\``;

const patch = [
  '*** Begin Patch',
  '*** Update File: README.md',
  '@@',
  '-Hello from the fixture.',
  '+Hello from the fixture, edited by Codex.',
  '*** End Patch',
  '',
].join('\n');

const script: Script = {
  version: 1,
  conversations: [
    {
      name: 'codex-editor',
      match: 'tarmac-session: e2e-codex',
      turns: [
        {
          text: 'Looking first.',
          toolCalls: [{ name: 'exec_command', input: { cmd: 'echo "shell ran in $(pwd)" > shell-proof.txt && cat README.md' } }],
          usage: { inputTokens: 2100, outputTokens: 70, cacheReadTokens: 500, cacheWriteTokens: 30 },
        },
        { toolCalls: [{ name: 'apply_patch', text: patch }], usage: { inputTokens: 2300, outputTokens: 90, cacheReadTokens: 800 } },
        { text: 'Done: README.md now says it was edited.', usage: { inputTokens: 2500, outputTokens: 20 } },
      ],
    },
  ],
};

describe('Codex against the scripted model endpoint (Responses API)', { skip }, () => {
  let model: ScriptedModel;
  let repo: string;
  let codexHome: string;

  before(async () => {
    const root = mkdtempSync(join(tmpdir(), 'tarmac-codex-'));
    repo = join(root, 'repo');
    codexHome = join(root, 'codex-home');
    mkdirSync(repo);
    mkdirSync(codexHome);
    writeFileSync(join(repo, 'README.md'), 'Hello from the fixture.\n');
    commitFiles(repo, 'init');
    model = await startScriptedModel({ script });
    // A provider entry pointing at the endpoint; a model name codex knows, so it offers apply_patch.
    writeFileSync(
      join(codexHome, 'config.toml'),
      [
        'model = "gpt-5.5"',
        'model_provider = "scripted"',
        '',
        '[model_providers.scripted]',
        'name = "Scripted model"',
        `base_url = "${model.url}/v1"`,
        'env_key = "SCRIPTED_MODEL_API_KEY"',
        'wire_api = "responses"',
        '',
      ].join('\n'),
    );
  });
  after(async () => await model?.close());

  it('runs a shell command, applies a patch, answers, and reports exactly the scripted usage', async () => {
    const env = { PATH: process.env.PATH, HOME: codexHome, CODEX_HOME: codexHome, SCRIPTED_MODEL_API_KEY: 'dummy-scripted-key' };
    const prompt = 'tarmac-session: e2e-codex\nShow me the readme, then mark it as edited.';
    // The sandbox is the container's job in Tarmac; on the host test the CLI runs unsandboxed in a temp repo.
    const result = await runWithStdin(codex!, ['exec', '--json', '--dangerously-bypass-approvals-and-sandbox'], {
      cwd: repo,
      env,
      stdin: prompt,
      timeoutMs: 120_000,
    });
    assert.equal(result.code, 0, `codex exited ${result.code}: ${result.stderr}\n${result.stdout}`);
    const events = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));

    assert.equal(readFileSync(join(repo, 'README.md'), 'utf8'), 'Hello from the fixture, edited by Codex.\n', 'apply_patch changed the file');
    assert.equal(readFileSync(join(repo, 'shell-proof.txt'), 'utf8'), `shell ran in ${repo}\n`, 'the shell command ran in the repository');
    const messages = events.filter((e) => e.type === 'item.completed' && e.item.type === 'agent_message').map((e) => e.item.text);
    assert.deepEqual(messages, ['Looking first.', 'Done: README.md now says it was edited.']);
    const turns = script.conversations[0]!.turns;
    const sum = (pick: (usage: (typeof turns)[number]['usage']) => number | undefined) => turns.reduce((total, turn) => total + (pick(turn.usage) ?? 0), 0);
    const completed = events.filter((e) => e.type === 'turn.completed');
    assert.equal(completed.length, 1);
    // OpenAI's convention: input_tokens include the cached ones.
    assert.deepEqual(completed[0].usage, {
      input_tokens: sum((u) => u.inputTokens) + sum((u) => u.cacheReadTokens) + sum((u) => u.cacheWriteTokens),
      cached_input_tokens: sum((u) => u.cacheReadTokens),
      cache_write_input_tokens: sum((u) => u.cacheWriteTokens),
      output_tokens: sum((u) => u.outputTokens),
      reasoning_output_tokens: 0,
    });

    const requests = model.requests;
    assert.deepEqual(
      requests.map((r) => [r.method, r.path, r.stream, r.outcome, r.conversation, r.turn, r.model]),
      [0, 1, 2].map((turn) => ['POST', '/v1/responses', true, 'turn', 'codex-editor', turn, 'gpt-5.5']),
      `requests: ${JSON.stringify(requests.map((r) => [r.path, r.outcome, r.message]))}`,
    );
    for (const request of requests) {
      assert.equal(request.headers.authorization, 'Bearer dummy-scripted-key');
      assert.match(String(request.headers['user-agent']), new RegExp(`^codex_exec/${pin.version.replaceAll('.', '\\.')} `));
    }
    // The endpoint saw the earlier turns: the second request carries the command's output, the third the patch result.
    const input = (index: number) => (requests[index]!.body as { input: any[] }).input;
    const commandOutput = input(1).find((item) => item.type === 'function_call_output' && item.call_id === 'call_scripted_0_0_0');
    assert.match(JSON.stringify(commandOutput), /Hello from the fixture\./);
    assert.ok(input(2).some((item) => item.type === 'custom_tool_call_output' && item.call_id === 'call_scripted_0_1_0'));
  });

  it('calls MCP tools (namespace mcp__tarmac) and apply_patch together, with a model catalog entry that turns tool search off', async () => {
    // Codex puts MCP tools behind tool_search for models whose catalog entry says supports_search_tool,
    // and offers apply_patch only to models it knows. A catalog entry of our own gets both: the MCP
    // tools declared up front (namespace mcp__tarmac, tool read_file) and the free-form apply_patch.
    const root = mkdtempSync(join(tmpdir(), 'tarmac-codex-mcp-'));
    const home = join(root, 'codex-home');
    const work = join(root, 'work');
    mkdirSync(home);
    mkdirSync(work);
    writeFileSync(join(work, 'notes.txt'), 'before\n');
    const catalog = await runWithStdin(codex!, ['debug', 'models'], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: home, CODEX_HOME: home },
      stdin: '',
      timeoutMs: 30_000,
    });
    // A classic tool surface: free-form apply_patch, no code mode, not the "responses lite" request shape.
    const classic = (m: Record<string, unknown>) => m.apply_patch_tool_type === 'freeform' && !m.tool_mode && m.use_responses_lite !== true;
    const known = (JSON.parse(catalog.stdout) as { models: Record<string, unknown>[] }).models.find(classic);
    assert.ok(known, 'the bundled catalog has a model with the classic tool surface');
    writeFileSync(
      join(root, 'catalog.json'),
      JSON.stringify({ models: [{ ...known, slug: 'scripted-codex', display_name: 'Scripted', supports_search_tool: false, upgrade: null }] }),
    );
    const server = writeMcpFixtureServer(root);
    const mcpModel = await startScriptedModel({ script: mcpRewriteScript(join(work, 'notes.txt')) });
    try {
      writeFileSync(
        join(home, 'config.toml'),
        [
          'model = "scripted-codex"',
          'model_provider = "scripted"',
          `model_catalog_json = ${JSON.stringify(join(root, 'catalog.json'))}`,
          '',
          '[model_providers.scripted]',
          'name = "Scripted model"',
          `base_url = "${mcpModel.url}/v1"`,
          'env_key = "SCRIPTED_MODEL_API_KEY"',
          'wire_api = "responses"',
          '',
          '[mcp_servers.tarmac]',
          `command = ${JSON.stringify(server.command)}`,
          `args = ${JSON.stringify(server.args)}`,
          // As the image's config: the turn waits for the server (a loaded machine starts it slowly)
          // instead of going on without its tools, and fails if it never comes.
          'required = true',
          'startup_timeout_sec = 60',
          '',
        ].join('\n'),
      );
      const env = { PATH: process.env.PATH, HOME: home, CODEX_HOME: home, SCRIPTED_MODEL_API_KEY: 'dummy' };
      const result = await runWithStdin(codex!, ['exec', '--json', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox'], {
        cwd: work,
        env,
        stdin: 'Rewrite notes.txt.',
        timeoutMs: 120_000,
      });
      assert.equal(result.code, 0, `codex exited ${result.code}: ${result.stderr}\n${result.stdout}`);
      assert.equal(
        readFileSync(join(work, 'notes.txt'), 'utf8'),
        'after\n',
        `${result.stdout}\n${JSON.stringify(mcpModel.requests.map((r) => [r.outcome, r.turn, r.message]))}`,
      );
      assert.deepEqual(server.calls(), [`read_file ${join(work, 'notes.txt')}`, `write_file ${join(work, 'notes.txt')}`]);
      const events = result.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.deepEqual(
        events.filter((e) => e.type === 'item.completed' && e.item.type === 'mcp_tool_call').map((e) => [e.item.server, e.item.tool, e.item.status]),
        [
          ['tarmac', 'read_file', 'completed'],
          ['tarmac', 'write_file', 'completed'],
        ],
      );
      assert.deepEqual(
        mcpModel.requests.map((r) => [r.outcome, r.turn]),
        [
          ['turn', 0],
          ['turn', 1],
          ['turn', 2],
        ],
        JSON.stringify(mcpModel.requests.map((r) => r.message)),
      );
      const tools = (mcpModel.requests[0]!.body as { tools: { type: string; name?: string }[] }).tools;
      assert.ok(
        tools.some((t) => t.type === 'custom' && t.name === 'apply_patch'),
        'apply_patch is offered',
      );
      assert.ok(
        tools.some((t) => t.type === 'namespace' && t.name === 'mcp__tarmac'),
        'the MCP tools are declared up front',
      );
    } finally {
      await mcpModel.close();
    }
  });

  it('continues the script in a resumed thread (codex exec resume): the follow-up is the next turn', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tarmac-codex-resume-'));
    const home = join(root, 'codex-home');
    mkdirSync(home);
    const resumeModel = await startScriptedModel({
      script: {
        version: 1,
        conversations: [
          {
            turns: [
              { text: 'First answer.', usage: { inputTokens: 100, outputTokens: 10 } },
              { text: 'Second answer, to the follow-up.', usage: { inputTokens: 200, outputTokens: 20 } },
            ],
          },
        ],
      },
    });
    try {
      writeFileSync(
        join(home, 'config.toml'),
        [
          'model = "gpt-5.5"',
          'model_provider = "scripted"',
          '[model_providers.scripted]',
          'name = "Scripted model"',
          `base_url = "${resumeModel.url}/v1"`,
          'env_key = "SCRIPTED_MODEL_API_KEY"',
          'wire_api = "responses"',
          '',
        ].join('\n'),
      );
      const env = { PATH: process.env.PATH, HOME: home, CODEX_HOME: home, SCRIPTED_MODEL_API_KEY: 'dummy' };
      const options = { cwd: root, env, timeoutMs: 120_000 };
      const first = await runWithStdin(codex!, ['exec', '--json', '--skip-git-repo-check'], { ...options, stdin: 'The first task.' });
      assert.equal(first.code, 0, first.stderr);
      const thread = first.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
        .find((e) => e.type === 'thread.started').thread_id as string;
      const second = await runWithStdin(codex!, ['exec', 'resume', '--json', '--skip-git-repo-check', thread, '-'], { ...options, stdin: 'The follow-up.' });
      assert.equal(second.code, 0, second.stderr);
      const events = second.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line));
      assert.deepEqual(
        events.filter((e) => e.item?.type === 'agent_message').map((e) => e.item.text),
        ['Second answer, to the follow-up.'],
      );
      assert.deepEqual(
        resumeModel.requests.map((r) => [r.outcome, r.turn, r.headers['session-id']]),
        [
          ['turn', 0, thread],
          ['turn', 1, thread],
        ],
      );
      const texts = JSON.stringify((resumeModel.requests[1]!.body as { input: unknown[] }).input);
      for (const seen of ['The first task.', 'First answer.', 'The follow-up.']) assert.ok(texts.includes(seen), `the second request carries "${seen}"`);
    } finally {
      await resumeModel.close();
    }
  });
});
