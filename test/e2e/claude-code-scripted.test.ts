/**
 * The real Claude Code CLI (the pinned platform binary from scripts/fetch-agent-clis.sh) against the
 * scripted model endpoint, on the host: it runs a Bash tool call, edits a file, and answers; its JSON
 * result reports exactly the scripted usage.
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

const claude = cachedAgentCli('claude-code');
const pin = pinnedAgentCli('claude-code');
const skip = claude ? false : `Claude Code ${pin.version} is not in the cache (${pin.bin}); run \`bash scripts/fetch-agent-clis.sh\``;

describe('Claude Code against the scripted model endpoint', { skip }, () => {
  let model: ScriptedModel;
  let repo: string;
  let home: string;
  let script: Script;

  before(async () => {
    const root = mkdtempSync(join(tmpdir(), 'tarmac-claude-'));
    repo = join(root, 'repo');
    home = join(root, 'home');
    mkdirSync(repo);
    mkdirSync(home);
    writeFileSync(join(repo, 'README.md'), 'Hello from the fixture.\n');
    commitFiles(repo, 'init');
    script = {
      version: 1,
      conversations: [
        {
          name: 'editor',
          match: 'tarmac-session: e2e-editor',
          turns: [
            {
              text: 'Let me look at the repository.',
              toolCalls: [
                { name: 'Bash', input: { command: 'echo "bash ran in $(pwd)" > bash-proof.txt && cat README.md', description: 'Show the readme' } },
                { name: 'Read', input: { file_path: join(repo, 'README.md') } },
              ],
              usage: { inputTokens: 1200, outputTokens: 85, cacheReadTokens: 300, cacheWriteTokens: 40 },
            },
            {
              toolCalls: [
                {
                  name: 'Edit',
                  input: {
                    file_path: join(repo, 'README.md'),
                    old_string: 'Hello from the fixture.',
                    new_string: 'Hello from the fixture, edited by Claude Code.',
                  },
                },
              ],
              usage: { inputTokens: 1500, outputTokens: 60, cacheReadTokens: 700 },
            },
            { text: 'Done: README.md now says it was edited.', usage: { inputTokens: 1700, outputTokens: 25, cacheReadTokens: 900 } },
          ],
        },
      ],
    };
    model = await startScriptedModel({ script });
  });
  after(async () => await model?.close());

  it('runs a Bash tool call, edits a file, answers, and reports exactly the scripted usage', async () => {
    const env = {
      PATH: process.env.PATH,
      HOME: home,
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_API_KEY: 'dummy-scripted-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    };
    const prompt = 'tarmac-session: e2e-editor\nShow me the readme, then mark it as edited.';
    const result = await runWithStdin(claude!, ['-p', '--output-format', 'json', '--allowedTools', 'Bash,Read,Edit,Write'], {
      cwd: repo,
      env,
      stdin: prompt,
      timeoutMs: 120_000,
    });
    assert.equal(result.code, 0, `claude exited ${result.code}: ${result.stderr}\n${result.stdout}`);
    const report = JSON.parse(result.stdout);

    assert.equal(readFileSync(join(repo, 'README.md'), 'utf8'), 'Hello from the fixture, edited by Claude Code.\n', 'the Edit tool changed the file');
    assert.equal(readFileSync(join(repo, 'bash-proof.txt'), 'utf8'), `bash ran in ${repo}\n`, 'the Bash tool ran in the repository');
    assert.deepEqual([report.is_error, report.subtype, report.result], [false, 'success', 'Done: README.md now says it was edited.']);
    assert.deepEqual(report.permission_denials, []);
    const turns = script.conversations[0]!.turns;
    const sum = (pick: (usage: (typeof turns)[number]['usage']) => number | undefined) => turns.reduce((total, turn) => total + (pick(turn.usage) ?? 0), 0);
    assert.deepEqual(
      {
        input: report.usage.input_tokens,
        output: report.usage.output_tokens,
        cacheRead: report.usage.cache_read_input_tokens,
        cacheWrite: report.usage.cache_creation_input_tokens,
      },
      {
        input: sum((u) => u.inputTokens),
        output: sum((u) => u.outputTokens),
        cacheRead: sum((u) => u.cacheReadTokens),
        cacheWrite: sum((u) => u.cacheWriteTokens),
      },
      'the CLI reports the usage the endpoint scripted',
    );

    // What the CLI sent: one streamed Messages request per turn, no side calls, nothing refused.
    const requests = model.requests;
    assert.deepEqual(
      requests.map((r) => [r.method, r.path, r.query, r.stream, r.outcome, r.conversation, r.turn]),
      [0, 1, 2].map((turn) => ['POST', '/v1/messages', 'beta=true', true, 'turn', 'editor', turn]),
      `requests: ${JSON.stringify(requests.map((r) => [r.path, r.outcome, r.message]))}`,
    );
    for (const request of requests) {
      assert.equal(request.headers['x-api-key'], 'dummy-scripted-key');
      assert.equal(request.headers['anthropic-version'], '2023-06-01');
      assert.match(String(request.headers['user-agent']), new RegExp(`^claude-cli/${pin.version.replaceAll('.', '\\.')} `));
    }
    // The endpoint saw the earlier turns: the second request carries the Bash output as a tool result.
    const second = requests[1]!.body as { messages: { role: string; content: unknown }[] };
    const results = second.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b: any) => b.type === 'tool_result');
    assert.deepEqual(results.map((b: any) => b.tool_use_id).sort(), ['toolu_scripted_0_0_0', 'toolu_scripted_0_0_1']);
    assert.match(JSON.stringify(results.find((b: any) => b.tool_use_id === 'toolu_scripted_0_0_0')), /Hello from the fixture\./);
  });

  it('calls MCP tools by their mcp__<server>__<tool> names when tool search is off (ENABLE_TOOL_SEARCH=false)', async () => {
    // Claude Code defers MCP tools behind ToolSearch by default: they are not in the request's tools
    // until the model searches for them. Turned off, they are declared up front and a script can call them.
    const root = mkdtempSync(join(tmpdir(), 'tarmac-claude-mcp-'));
    const work = join(root, 'work');
    mkdirSync(work);
    mkdirSync(join(root, 'home'));
    writeFileSync(join(work, 'notes.txt'), 'before\n');
    const server = writeMcpFixtureServer(root);
    const mcpConfig = join(root, 'mcp.json');
    writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { tarmac: { command: server.command, args: server.args } } }));
    const mcpModel = await startScriptedModel({ script: mcpRewriteScript(join(work, 'notes.txt')) });
    try {
      const env = {
        PATH: process.env.PATH,
        HOME: join(root, 'home'),
        ANTHROPIC_BASE_URL: mcpModel.url,
        ANTHROPIC_API_KEY: 'dummy',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        ENABLE_TOOL_SEARCH: 'false',
      };
      const args = [
        '-p',
        '--output-format',
        'json',
        '--mcp-config',
        mcpConfig,
        '--strict-mcp-config',
        '--allowedTools',
        'mcp__tarmac__read_file,mcp__tarmac__write_file',
      ];
      const result = await runWithStdin(claude!, args, { cwd: work, env, stdin: 'Rewrite notes.txt.', timeoutMs: 120_000 });
      assert.equal(result.code, 0, `claude exited ${result.code}: ${result.stderr}\n${result.stdout}`);
      const report = JSON.parse(result.stdout);
      assert.deepEqual(
        [report.is_error, report.result, report.usage.input_tokens, report.usage.output_tokens],
        [false, 'Wrote notes.txt through the gateway tools.', 600, 60],
      );
      assert.equal(readFileSync(join(work, 'notes.txt'), 'utf8'), 'after\n');
      assert.deepEqual(server.calls(), [`read_file ${join(work, 'notes.txt')}`, `write_file ${join(work, 'notes.txt')}`]);
      assert.deepEqual(
        mcpModel.requests.map((r) => [r.outcome, r.turn]),
        [
          ['turn', 0],
          ['turn', 1],
          ['turn', 2],
        ],
      );
      const declared = (mcpModel.requests[0]!.body as { tools: { name: string }[] }).tools.map((t) => t.name);
      assert.ok(declared.includes('mcp__tarmac__read_file') && declared.includes('mcp__tarmac__write_file'), `declared: ${declared.join(', ')}`);
    } finally {
      await mcpModel.close();
    }
  });

  it('continues the script in a resumed session: the follow-up is the next turn, and the endpoint sees the earlier ones', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tarmac-claude-resume-'));
    mkdirSync(join(root, 'home'));
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
      const env = {
        PATH: process.env.PATH,
        HOME: join(root, 'home'),
        ANTHROPIC_BASE_URL: resumeModel.url,
        ANTHROPIC_API_KEY: 'dummy',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      };
      const first = await runWithStdin(claude!, ['-p', '--output-format', 'json'], { cwd: root, env, stdin: 'The first task.', timeoutMs: 120_000 });
      assert.equal(first.code, 0, first.stderr);
      const session = JSON.parse(first.stdout).session_id as string;
      const second = await runWithStdin(claude!, ['-p', '--output-format', 'json', '--resume', session], {
        cwd: root,
        env,
        stdin: 'The follow-up.',
        timeoutMs: 120_000,
      });
      assert.equal(second.code, 0, second.stderr);
      const report = JSON.parse(second.stdout);
      assert.deepEqual(
        [report.result, report.session_id, report.usage.input_tokens, report.usage.output_tokens],
        ['Second answer, to the follow-up.', session, 200, 20],
      );
      assert.deepEqual(
        resumeModel.requests.map((r) => [r.outcome, r.turn, r.headers['x-claude-code-session-id']]),
        [
          ['turn', 0, session],
          ['turn', 1, session],
        ],
      );
      const texts = JSON.stringify((resumeModel.requests[1]!.body as { messages: unknown[] }).messages);
      for (const seen of ['The first task.', 'First answer.', 'The follow-up.']) assert.ok(texts.includes(seen), `the second request carries "${seen}"`);
    } finally {
      await resumeModel.close();
    }
  });
});
