import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type Docker from 'dockerode';
import { applyToolEvent, breakerRefusal, emptyBreaker, markTriggered, type BreakerState } from '../../policies/circuit-breaker';
import { commandGroundingRefusal, editGroundingRefusal, type GroundingRules } from '../../policies/grounding';
import { CappedOutput, DockerFrameReader } from '../containers/capped-output';
import { ConfinedPathError, confinedPath, listDirectoryNoFollow, lstatNoFollow, readFileNoFollow, writeFileNoFollow, type Owner } from '../stores/confined-fs';
import { searchAnswer, searchCommand, searchLimits } from './tool-gateway-search';
import { containerUser } from '../git/git';
import { listenPrivately } from './private-socket';
import { writeFileAtomic } from '../stores/run-store';

/**
 * The tool gateway: an MCP server owned by the platform, one per session, on a unix
 * socket the session container reaches at /tarmac/gateway/gateway.sock. Policy lives
 * in the tools, not in prompts: the circuit breaker and the grounding gates refuse
 * calls; every call is recorded (telemetry). Policy state is persisted after every
 * call, so a worker restart does not reset it.
 *
 * The workspace is the agent's and changes under the gateway's feet, so the file tools
 * never follow a link and never reach `.git` (confined-fs.ts); `search` runs inside the
 * session container, and `run_command` too — or, when the session works in a repository
 * environment, inside its command container (command-container.ts) on the same workspace;
 * whatever comes back is capped while it is read. The socket is reachable by the
 * container's user only (private-socket.ts).
 */
export interface GatewayOptions {
  /** Directory holding the socket, the persisted state and the telemetry (mounted into the container). */
  dir: string;
  /** The session's workspace on the host (file tools work here; it is the container's /workspace). Agent-writable: never trusted. */
  workspace: string;
  docker: Docker;
  /** The session container, once it exists: commands run inside it. */
  containerId: () => string | undefined;
  /**
   * The container `run_command` runs in instead, when the session works in a repository
   * environment: its id, once it runs (command-container.ts). Default none: the session container.
   */
  commandContainer?: () => Promise<string>;
  user: string;
  rules: GroundingRules;
  /** Timeout of one run_command (default 120 s). */
  commandTimeoutMs?: number;
  /** Tool calls the session may make in all (default unlimited); beyond it every call is refused. */
  maxToolCalls?: number;
  /** A reviewer's gateway: the file tools write nothing (its container sees the workspace read-only too). */
  readOnly?: boolean;
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

/** Sizes the gateway holds to, whatever the agent asks for. */
export const gatewayLimits = {
  /** read_file and edit_file refuse larger files. */
  readBytes: 2 * 1024 * 1024,
  /** write_file and edit_file refuse to write more. */
  writeBytes: 8 * 1024 * 1024,
  /** list_files shows at most this many entries. */
  listEntries: 2000,
  /** run_command keeps the first and the last bytes of the output; the rest is counted and dropped. */
  outputHeadBytes: 8 * 1024,
  outputTailBytes: 24 * 1024,
  /** search output kept (already bounded in lines × bytes by the search itself). */
  searchOutputBytes: 256 * 1024,
} as const;

const tools = [
  { name: 'read_file', description: 'Read a file of the workspace (links are not followed).', inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
  { name: 'list_files', description: 'List a directory of the workspace (links are shown with @, not followed).', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } },
  {
    name: 'search',
    description: `Search the workspace for a POSIX extended regular expression (grep -E), at most ${searchLimits.hits} matches as path:line:text.`,
    inputSchema: { type: 'object', properties: { pattern: { type: 'string' }, path: { type: 'string' } }, required: ['pattern'] },
  },
  {
    name: 'edit_file',
    description: 'Replace text in a file (read it first).',
    inputSchema: { type: 'object', properties: { path: { type: 'string' }, find: { type: 'string' }, replace: { type: 'string' } }, required: ['path', 'find', 'replace'] },
  },
  { name: 'write_file', description: 'Write a whole file (read it first if it exists).', inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] } },
  {
    name: 'run_command',
    description: "Run a shell command in /workspace (with the repository's toolchain and dependencies when it declares an environment).",
    inputSchema: { type: 'object', properties: { command: { type: 'string' }, timeoutMs: { type: 'number' } }, required: ['command'] },
  },
] as const;

/** A tool argument as text ('' when absent or not text). */
const str = (value: unknown, fallback = ''): string => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : fallback);

const text = (value: string, isError = false) => ({ content: [{ type: 'text' as const, text: value }], ...(isError ? { isError: true } : {}) });

/** A workspace path as the agent gives it: relative, or absolute under the container's /workspace. Normalised and confined. */
const workspacePath = (value: string): string => confinedPath(value === '/workspace' ? '.' : value.startsWith('/workspace/') ? value.slice('/workspace/'.length) : value);

/** Files the gateway creates belong to the agents' uid when the worker is root (as if the agent made them). */
const fileOwner = (): Owner | undefined => (process.getuid?.() === 0 ? containerUser() : undefined);

export async function startGateway(options: GatewayOptions): Promise<GatewayHandle> {
  mkdirSync(options.dir, { recursive: true });
  const statePath = join(options.dir, 'state.json');
  const telemetryPath = join(options.dir, 'telemetry.jsonl');
  let state: GatewayState = existsSync(statePath)
    ? (JSON.parse(readFileSync(statePath, 'utf8')) as GatewayState)
    : { ...emptyBreaker(), toolCalls: 0, refusals: [] };
  const persist = () => writeFileAtomic(statePath, JSON.stringify(state));
  const workspace = options.workspace;

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

  /**
   * Runs argv in the session container (or `id`'s); stdout and stderr are read frame by frame
   * into capped buffers, so a flood costs the worker a fixed amount of memory.
   */
  async function execInContainer(cmd: string[], timeoutMs: number, caps: { head: number; tail: number }, id = options.containerId()): Promise<{ exitCode: number; stdout: CappedOutput; stderr: CappedOutput; output: CappedOutput }> {
    if (!id) throw new Error('the session container is not running');
    const exec = await options.docker.getContainer(id).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, WorkingDir: '/workspace', User: options.user });
    const stream = await exec.start({ hijack: true, stdin: false });
    const streams = { stdout: new CappedOutput(caps.head, caps.tail), stderr: new CappedOutput(caps.head, caps.tail), output: new CappedOutput(caps.head, caps.tail) };
    const frames = new DockerFrameReader((kind, payload) => {
      (kind === 2 ? streams.stderr : streams.stdout).push(payload);
      streams.output.push(payload);
    });
    stream.on('data', (chunk: Buffer) => frames.push(chunk));
    const finished = new Promise<void>((done) => {
      stream.on('end', () => done());
      stream.on('close', () => done());
      stream.on('error', () => done());
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((done) => (timer = setTimeout(() => done('timeout'), timeoutMs)));
    const outcome = await Promise.race([finished, timedOut]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      stream.destroy();
      streams.output.push(Buffer.from(`\ntimed out after ${timeoutMs} ms`));
      return { exitCode: 124, ...streams };
    }
    return { exitCode: (await exec.inspect()).ExitCode ?? 1, ...streams };
  }

  async function call(name: string, args: Record<string, unknown>) {
    const started = Date.now();
    if (options.maxToolCalls !== undefined && state.toolCalls >= options.maxToolCalls) {
      return await refuse(name, `tool budget: the session has used its ${options.maxToolCalls} tool calls`);
    }
    switch (name) {
      case 'read_file': {
        const path = workspacePath(str(args.path));
        const content = (await readFileNoFollow(workspace, path, gatewayLimits.readBytes)).toString('utf8');
        state = { ...state, ...applyToolEvent(state, { kind: 'read', file: path }) };
        await record({ tool: name, path, durationMs: Date.now() - started });
        return text(content);
      }
      case 'list_files': {
        const path = workspacePath(str(args.path, '.'));
        const { entries, truncated } = await listDirectoryNoFollow(workspace, path, gatewayLimits.listEntries);
        const lines = entries.map(({ name: entry, kind }) => (kind === 'directory' ? `${entry}/` : kind === 'link' ? `${entry}@` : entry));
        if (truncated) lines.push(`[listing stopped at ${gatewayLimits.listEntries} entries]`);
        await record({ tool: name, path, durationMs: Date.now() - started });
        return text(lines.join('\n'));
      }
      case 'search': {
        const pattern = str(args.pattern);
        if (pattern.length === 0 || pattern.length > searchLimits.patternChars) return await refuse(name, `search: the pattern must be 1 to ${searchLimits.patternChars} characters`);
        const path = workspacePath(str(args.path, '.'));
        const run = await execInContainer(searchCommand(pattern, path), (searchLimits.seconds + 5) * 1000, { head: gatewayLimits.searchOutputBytes, tail: 0 });
        const answer = searchAnswer({ exitCode: run.exitCode, stdout: run.stdout.text(), stderr: run.stderr.text() });
        await record({ tool: name, pattern: pattern.slice(0, 200), path, hits: answer.hits, exitCode: run.exitCode, durationMs: Date.now() - started });
        return text(answer.text, answer.isError);
      }
      case 'edit_file':
      case 'write_file': {
        const path = workspacePath(str(args.path));
        if (options.readOnly) return await refuse(name, `${name}: this session reviews; its workspace is read-only`, { path });
        const kind = await lstatNoFollow(workspace, path);
        if (kind !== undefined && kind !== 'file') return await refuse(name, `${name}: ${path} is ${kind === 'link' ? 'a symbolic link; file tools do not follow links' : `not a regular file (${kind})`}`, { path });
        const refusal = editGroundingRefusal(state.filesRead, path, kind === 'file');
        if (refusal) return await refuse(name, refusal, { path });
        let content: string;
        if (name === 'edit_file') {
          const find = str(args.find);
          const before = (await readFileNoFollow(workspace, path, gatewayLimits.readBytes)).toString('utf8');
          if (find === '' || !before.includes(find)) return await refuse(name, `edit_file: the text to find is not in ${path}`, { path });
          content = before.split(find).join(str(args.replace));
        } else content = str(args.content);
        if (Buffer.byteLength(content) > gatewayLimits.writeBytes) return await refuse(name, `${name}: ${path} would be more than ${gatewayLimits.writeBytes} bytes`, { path });
        const owner = fileOwner();
        await writeFileNoFollow(workspace, path, content, owner ? { owner } : {});
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
        const asked = Number(args.timeoutMs ?? options.commandTimeoutMs ?? 120_000);
        const timeoutMs = Math.min(Number.isFinite(asked) && asked > 0 ? asked : 120_000, 600_000);
        const target = options.commandContainer ? await options.commandContainer() : options.containerId();
        const result = await execInContainer(['sh', '-c', command], timeoutMs, { head: gatewayLimits.outputHeadBytes, tail: gatewayLimits.outputTailBytes }, target);
        state = { ...state, ...applyToolEvent(state, { kind: 'command-result', command, exitCode: result.exitCode }) };
        const output = result.output.text();
        const fingerprint = createHash('sha256').update(output).digest('hex').slice(0, 16);
        const dropped = result.output.dropped;
        await record({ tool: name, command, exitCode: result.exitCode, durationMs: Date.now() - started, outputFingerprint: fingerprint, outputBytes: result.output.total, ...(dropped > 0 ? { outputDroppedBytes: dropped } : {}) });
        const notice = dropped > 0 ? `output truncated: ${dropped} bytes dropped (kept the first ${gatewayLimits.outputHeadBytes} and the last ${gatewayLimits.outputTailBytes} bytes)\n` : '';
        return text(`exit ${result.exitCode}\n${notice}${output}`, result.exitCode !== 0);
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
        // A path the confinement refused is a refusal the session's record shows, not a crash.
        if (error instanceof ConfinedPathError) return await refuse(request.params.name, error.message, { path: error.path }).catch(() => text(error.message, true));
        return text(`error: ${(error as Error).message}`, true);
      }
    });
    socket.on('error', () => undefined);
    void server.connect(new StdioServerTransport(socket, socket));
  }

  // A retried activity re-creates the gateway on the same path, with the state it persisted.
  const socket = await listenPrivately(options.dir, 'gateway.sock', containerUser(), serve);
  return {
    socketPath: socket.socketPath,
    socketDir: socket.socketDir,
    state: () => state,
    close: () => socket.close(),
  };
}
