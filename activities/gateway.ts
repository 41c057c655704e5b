import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { appendFile, chmod, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type Docker from 'dockerode';
import { applyToolEvent, breakerRefusal, emptyBreaker, markTriggered, type BreakerState } from '../workflows/policies/circuit-breaker';
import { commandGroundingRefusal, editGroundingRefusal, type GroundingRules } from '../workflows/policies/grounding';
import { demuxDockerLog } from './containers';
import { writeFileAtomic } from './run-store';

/**
 * The tool gateway: an MCP server owned by the platform, one per session, on a unix
 * socket the session container reaches at /tarmac/gateway/gateway.sock. Policy lives
 * in the tools, not in prompts: the circuit breaker and the grounding gates refuse
 * calls; every call is recorded (telemetry). Policy state is persisted after every
 * call, so a worker restart does not reset it.
 */
export interface GatewayOptions {
  /** Directory holding the socket, the persisted state and the telemetry (mounted into the container). */
  dir: string;
  /** The session's workspace on the host (file tools work here; it is the container's /workspace). */
  workspace: string;
  docker: Docker;
  /** The session container, once it exists: commands run inside it. */
  containerId: () => string | undefined;
  user: string;
  rules: GroundingRules;
  /** Timeout of one run_command (default 120 s). */
  commandTimeoutMs?: number;
  /** Tool calls the session may make in all (default unlimited); beyond it every call is refused. */
  maxToolCalls?: number;
}

export interface GatewayState extends BreakerState {
  toolCalls: number;
  refusals: { tool: string; reason: string }[];
}

export interface GatewayHandle {
  socketPath: string;
  /** The directory holding the socket: mount it (not the socket file) so a re-created socket is seen. */
  socketDir: string;
  state(): GatewayState;
  close(): Promise<void>;
}

const tools = [
  { name: 'read_file', description: 'Read a file of the workspace.', inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
  { name: 'list_files', description: 'List a directory of the workspace.', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } },
  { name: 'search', description: 'Search the workspace for a regular expression.', inputSchema: { type: 'object', properties: { pattern: { type: 'string' }, path: { type: 'string' } }, required: ['pattern'] } },
  {
    name: 'edit_file',
    description: 'Replace text in a file (read it first).',
    inputSchema: { type: 'object', properties: { path: { type: 'string' }, find: { type: 'string' }, replace: { type: 'string' } }, required: ['path', 'find', 'replace'] },
  },
  { name: 'write_file', description: 'Write a whole file (read it first if it exists).', inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] } },
  {
    name: 'run_command',
    description: 'Run a shell command in the session container, in /workspace.',
    inputSchema: { type: 'object', properties: { command: { type: 'string' }, timeoutMs: { type: 'number' } }, required: ['command'] },
  },
] as const;

/** A tool argument as text ('' when absent or not text). */
const str = (value: unknown, fallback = ''): string => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : fallback);

const text = (value: string, isError = false) => ({ content: [{ type: 'text' as const, text: value }], ...(isError ? { isError: true } : {}) });

export async function startGateway(options: GatewayOptions): Promise<GatewayHandle> {
  mkdirSync(options.dir, { recursive: true });
  // Unix socket paths are limited to ~107 bytes, and data dirs can be long: the socket lives in a
  // short directory derived from the session's gateway dir, so a restart finds the same path.
  const socketDir = join(tmpdir(), 'tarmac-gw', createHash('sha256').update(resolve(options.dir)).digest('hex').slice(0, 20));
  mkdirSync(socketDir, { recursive: true, mode: 0o755 });
  const socketPath = join(socketDir, 'gateway.sock');
  const statePath = join(options.dir, 'state.json');
  const telemetryPath = join(options.dir, 'telemetry.jsonl');
  let state: GatewayState = existsSync(statePath)
    ? (JSON.parse(readFileSync(statePath, 'utf8')) as GatewayState)
    : { ...emptyBreaker(), toolCalls: 0, refusals: [] };
  const persist = () => writeFileAtomic(statePath, JSON.stringify(state));

  const inWorkspace = (path: string): string => {
    const full = resolve(options.workspace, path);
    const inside = relative(options.workspace, full);
    if (inside.startsWith('..') || resolve(full) === resolve(options.workspace, '..')) throw new Error(`path ${path} is outside the workspace`);
    if (inside.split('/')[0] === '.git') throw new Error('the .git directory is not a file the agent may touch through tools');
    return full;
  };
  const normal = (path: string) => relative(options.workspace, inWorkspace(path));

  async function record(entry: Record<string, unknown>): Promise<void> {
    state.toolCalls += 1;
    await persist();
    await appendFile(telemetryPath, `${JSON.stringify({ at: new Date().toISOString(), ...entry })}\n`);
  }
  async function refuse(tool: string, reason: string, extra: Record<string, unknown> = {}) {
    state.refusals.push({ tool, reason });
    await record({ tool, refused: reason, ...extra });
    return text(reason, true);
  }

  async function runInContainer(command: string, timeoutMs: number): Promise<{ exitCode: number; output: string }> {
    const id = options.containerId();
    if (!id) throw new Error('the session container is not running');
    const exec = await options.docker.getContainer(id).exec({ Cmd: ['sh', '-c', command], AttachStdout: true, AttachStderr: true, WorkingDir: '/workspace', User: options.user });
    const stream = await exec.start({ hijack: true, stdin: false });
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    const finished = new Promise<void>((done) => stream.on('end', () => done()));
    const timer = new Promise<'timeout'>((done) => setTimeout(() => done('timeout'), timeoutMs));
    if ((await Promise.race([finished, timer])) === 'timeout') {
      stream.destroy();
      return { exitCode: 124, output: `timed out after ${timeoutMs} ms` };
    }
    const { stdout, stderr } = demuxDockerLog(Buffer.concat(chunks));
    return { exitCode: (await exec.inspect()).ExitCode ?? 1, output: `${stdout}${stderr}` };
  }

  async function call(name: string, args: Record<string, unknown>) {
    const started = Date.now();
    if (options.maxToolCalls !== undefined && state.toolCalls >= options.maxToolCalls) {
      return await refuse(name, `tool budget: the session has used its ${options.maxToolCalls} tool calls`);
    }
    switch (name) {
      case 'read_file': {
        const path = normal(str(args.path));
        const content = await readFile(inWorkspace(path), 'utf8');
        state = { ...state, ...applyToolEvent(state, { kind: 'read', file: path }) };
        await record({ tool: name, path, durationMs: Date.now() - started });
        return text(content);
      }
      case 'list_files': {
        const path = normal(str(args.path, '.'));
        const entries = readdirSync(inWorkspace(path || '.')).filter((entry) => entry !== '.git').map((entry) => (statSync(join(inWorkspace(path || '.'), entry)).isDirectory() ? `${entry}/` : entry));
        await record({ tool: name, path, durationMs: Date.now() - started });
        return text(entries.join('\n'));
      }
      case 'search': {
        const pattern = new RegExp(str(args.pattern));
        const root = inWorkspace(str(args.path, '.'));
        const hits: string[] = [];
        const walk = (dir: string) => {
          for (const entry of readdirSync(dir)) {
            if (entry === '.git' || entry === 'node_modules') continue;
            const full = join(dir, entry);
            if (statSync(full).isDirectory()) walk(full);
            else readFileSync(full, 'utf8').split('\n').forEach((line, index) => pattern.test(line) && hits.push(`${relative(options.workspace, full)}:${index + 1}: ${line}`));
            if (hits.length > 500) return;
          }
        };
        walk(root);
        await record({ tool: name, pattern: str(args.pattern), hits: hits.length, durationMs: Date.now() - started });
        return text(hits.join('\n'));
      }
      case 'edit_file':
      case 'write_file': {
        const path = normal(str(args.path));
        const full = inWorkspace(path);
        const refusal = editGroundingRefusal(state.filesRead, path, existsSync(full));
        if (refusal) return await refuse(name, refusal, { path });
        if (name === 'edit_file') {
          const before = await readFile(full, 'utf8');
          if (!before.includes(str(args.find))) return await refuse(name, `edit_file: the text to find is not in ${path}`, { path });
          await writeFile(full, before.split(str(args.find)).join(str(args.replace)));
        } else {
          mkdirSync(dirname(full), { recursive: true });
          await writeFile(full, str(args.content));
        }
        state = { ...state, ...applyToolEvent(state, { kind: 'edit', file: path }) };
        await record({ tool: name, path, durationMs: Date.now() - started });
        return text(`${name === 'edit_file' ? 'edited' : 'wrote'} ${path}`);
      }
      case 'run_command': {
        const command = str(args.command);
        const grounding = commandGroundingRefusal(options.rules, state.filesRead, command);
        if (grounding) return await refuse(name, grounding, { command });
        const breaker = breakerRefusal(state, command);
        if (breaker) {
          state = { ...state, ...markTriggered(state) };
          return await refuse(name, breaker, { command });
        }
        const result = await runInContainer(command, Math.min(Number(args.timeoutMs ?? options.commandTimeoutMs ?? 120_000), 600_000));
        state = { ...state, ...applyToolEvent(state, { kind: 'command-result', command, exitCode: result.exitCode }) };
        const fingerprint = createHash('sha256').update(result.output).digest('hex').slice(0, 16);
        await record({ tool: name, command, exitCode: result.exitCode, durationMs: Date.now() - started, outputFingerprint: fingerprint });
        return text(`exit ${result.exitCode}\n${result.output.slice(-8000)}`, result.exitCode !== 0);
      }
      default:
        return text(`unknown tool ${name}`, true);
    }
  }

  function serve(socket: import('node:net').Socket): void {
    const server = new Server({ name: 'tarmac-gateway', version: '0.1.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools.map((tool) => ({ ...tool, inputSchema: { ...tool.inputSchema } })) }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      try {
        return await call(request.params.name, request.params.arguments ?? {});
      } catch (error) {
        return text(`error: ${(error as Error).message}`, true);
      }
    });
    socket.on('error', () => undefined);
    void server.connect(new StdioServerTransport(socket, socket));
  }

  // A retried activity re-creates the gateway on the same path, with the state it persisted.
  rmSync(socketPath, { force: true });
  const listener: NetServer = createServer(serve);
  await new Promise<void>((done, fail) => {
    listener.once('error', fail);
    listener.listen(socketPath, () => done());
  });
  await chmod(socketPath, 0o777);
  return {
    socketPath,
    socketDir,
    state: () => state,
    close: () => new Promise<void>((done) => listener.close(() => done())),
  };
}
