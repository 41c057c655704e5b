import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Script } from '../../infra/scripted-model/script';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs an agent CLI with the prompt on stdin (never as one argv string: large prompts hit E2BIG); SIGKILL after `timeoutMs`. */
export function runWithStdin(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; stdin: string; timeoutMs: number },
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.stdin);
  });
}

/**
 * A scripted-model script that rewrites `file` through the MCP fixture server's tools (namespace
 * `mcp__tarmac`): reads it, writes `after\n` to it, answers. 600 input and 60 output tokens in all.
 */
export function mcpRewriteScript(file: string): Script {
  return {
    version: 1,
    conversations: [
      {
        turns: [
          { toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: file } }], usage: { inputTokens: 100, outputTokens: 10 } },
          { toolCalls: [{ name: 'mcp__tarmac__write_file', input: { path: file, content: 'after\n' } }], usage: { inputTokens: 200, outputTokens: 20 } },
          { text: 'Wrote notes.txt through the gateway tools.', usage: { inputTokens: 300, outputTokens: 30 } },
        ],
      },
    ],
  };
}

/**
 * Writes a stdio MCP server named like the tool gateway's tools (`read_file`, `write_file`) into `dir`;
 * each call is logged as "<tool> <path>" to `callLog`. For checking that a real CLI reaches MCP tools
 * by the names a script uses; the gateway itself has its own tests.
 */
export function writeMcpFixtureServer(dir: string): { command: string; args: string[]; callLog: string; calls(): string[] } {
  const sdk = (path: string) => JSON.stringify(require.resolve(`@modelcontextprotocol/sdk/${path}`));
  const callLog = join(dir, 'mcp-calls.log');
  const file = join(dir, 'mcp-server.cjs');
  writeFileSync(
    file,
    `
const { Server } = require(${sdk('server/index.js')});
const { StdioServerTransport } = require(${sdk('server/stdio.js')});
const { CallToolRequestSchema, ListToolsRequestSchema } = require(${sdk('types.js')});
const fs = require('node:fs');
const server = new Server({ name: 'tarmac', version: '0.0.0' }, { capabilities: { tools: {} } });
const path = { type: 'string' };
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [
  { name: 'read_file', description: 'Read a file', inputSchema: { type: 'object', properties: { path }, required: ['path'] } },
  { name: 'write_file', description: 'Write a file', inputSchema: { type: 'object', properties: { path, content: { type: 'string' } }, required: ['path', 'content'] } },
] }));
server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
  fs.appendFileSync(${JSON.stringify(callLog)}, params.name + ' ' + params.arguments.path + '\\n');
  if (params.name === 'read_file') return { content: [{ type: 'text', text: fs.readFileSync(params.arguments.path, 'utf8') }] };
  fs.writeFileSync(params.arguments.path, params.arguments.content);
  return { content: [{ type: 'text', text: 'written' }] };
});
server.connect(new StdioServerTransport());
`,
  );
  appendFileSync(callLog, '');
  return { command: process.execPath, args: [file], callLog, calls: () => readFileSync(callLog, 'utf8').split('\n').filter(Boolean) };
}

/**
 * Why a test of real agent images is skipped: the images that are not built (false when all are).
 * In CI (`CI` set) it never skips: setup builds every agent image there, so a missing one is a
 * failure of the test (which then names it), not a quiet skip.
 */
export function skipUnlessBuilt(images: string[]): false | string {
  if (process.env.CI) return false;
  const missing = images.filter((image) => {
    try {
      execFileSync('docker', ['image', 'inspect', image], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
  return missing.length === 0 ? false : `${missing.join(', ')} not built; run \`bash scripts/fetch-agent-clis.sh && bash scripts/build-images.sh\``;
}
