import { createHash } from 'node:crypto';
import type Docker from 'dockerode';
import { applyToolEvent, breakerRefusal, markTriggered, type BreakerState } from '../../policies/circuit-breaker';
import { commandGroundingRefusal, editGroundingRefusal } from '../../policies/grounding';
import { CappedOutput, DockerFrameReader } from '../containers/capped-output';
import { confinedPath, listDirectoryNoFollow, lstatNoFollow, readFileNoFollow, writeFileNoFollow, type Owner } from '../stores/confined-fs';
import { containerUser } from '../git/git';
import { searchAnswer, searchCommand, searchLimits } from './tool-gateway-search';
import type { GroundingRules } from '../../policies/grounding';

/** The tool gateway's tools (tool-gateway.ts): one handler per tool. */

/** What the tools read of the gateway's options (tool-gateway.ts). */
export interface ToolOptions {
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
  /** A reviewer's gateway: the file tools write nothing (its container sees the workspace read-only too). */
  readOnly?: boolean;
}

export interface GatewayState extends BreakerState {
  toolCalls: number;
  refusals: { tool: string; reason: string }[];
}

/** Sizes the gateway holds to, whatever the agent asks for. */
const gatewayLimits = {
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

/** The tools the gateway offers, as MCP lists them. */
export const tools = [
  {
    name: 'read_file',
    description: 'Read a file of the workspace (links are not followed).',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'list_files',
    description: 'List a directory of the workspace (links are shown with @, not followed).',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
  },
  {
    name: 'search',
    description: `Search the workspace for a POSIX extended regular expression (grep -E), at most ${searchLimits.hits} matches as path:line:text.`,
    inputSchema: { type: 'object', properties: { pattern: { type: 'string' }, path: { type: 'string' } }, required: ['pattern'] },
  },
  {
    name: 'edit_file',
    description: 'Replace text in a file (read it first).',
    inputSchema: {
      type: 'object',
      properties: { path: { type: 'string' }, find: { type: 'string' }, replace: { type: 'string' } },
      required: ['path', 'find', 'replace'],
    },
  },
  {
    name: 'write_file',
    description: 'Write a whole file (read it first if it exists).',
    inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] },
  },
  {
    name: 'run_command',
    description: "Run a shell command in /workspace (with the repository's toolchain and dependencies when it declares an environment).",
    inputSchema: { type: 'object', properties: { command: { type: 'string' }, timeoutMs: { type: 'number' } }, required: ['command'] },
  },
] as const;

export type ToolName = (typeof tools)[number]['name'];

/** A tool argument as text ('' when absent or not text). */
const str = (value: unknown, fallback = ''): string => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : fallback);

export const text = (value: string, isError = false) => ({ content: [{ type: 'text' as const, text: value }], ...(isError ? { isError: true } : {}) });

/** A workspace path as the agent gives it: relative, or absolute under the container's /workspace. Normalised and confined. */
const workspacePath = (value: string): string =>
  confinedPath(value === '/workspace' ? '.' : value.startsWith('/workspace/') ? value.slice('/workspace/'.length) : value);

/** Files the gateway creates belong to the agents' uid when the worker is root (as if the agent made them). */
const fileOwner = (): Owner | undefined => (process.getuid?.() === 0 ? containerUser() : undefined);

type ToolAnswer = ReturnType<typeof text>;

/** What a tool's handler is given: the call, the gateway's options and state, and how to record or refuse. */
interface ToolCall {
  name: string;
  args: Record<string, unknown>;
  /** When the call came in (ms). */
  started: number;
  options: ToolOptions;
  /** The persisted policy state; a handler replaces `state` with the breaker's next. */
  session: { state: GatewayState };
  record(entry: Record<string, unknown>): Promise<void>;
  refuse(tool: string, reason: string, extra?: Record<string, unknown>): Promise<ToolAnswer>;
}

type ToolHandler = (call: ToolCall) => Promise<ToolAnswer>;

/** Applies a breaker event to the session's state. */
function note(call: ToolCall, event: Parameters<typeof applyToolEvent>[1]): void {
  call.session.state = { ...call.session.state, ...applyToolEvent(call.session.state, event) };
}

async function readFileTool(call: ToolCall): Promise<ToolAnswer> {
  const { name, args, started, options } = call;
  const path = workspacePath(str(args.path));
  const content = (await readFileNoFollow(options.workspace, path, gatewayLimits.readBytes)).toString('utf8');
  note(call, { kind: 'read', file: path });
  await call.record({ tool: name, path, durationMs: Date.now() - started });
  return text(content);
}

async function listFilesTool(call: ToolCall): Promise<ToolAnswer> {
  const { name, args, started, options } = call;
  const path = workspacePath(str(args.path, '.'));
  const { entries, truncated } = await listDirectoryNoFollow(options.workspace, path, gatewayLimits.listEntries);
  const lines = entries.map(({ name: entry, kind }) => (kind === 'directory' ? `${entry}/` : kind === 'link' ? `${entry}@` : entry));
  if (truncated) lines.push(`[listing stopped at ${gatewayLimits.listEntries} entries]`);
  await call.record({ tool: name, path, durationMs: Date.now() - started });
  return text(lines.join('\n'));
}

async function searchTool(call: ToolCall): Promise<ToolAnswer> {
  const { name, args, started, options } = call;
  const pattern = str(args.pattern);
  if (pattern.length === 0 || pattern.length > searchLimits.patternChars)
    return await call.refuse(name, `search: the pattern must be 1 to ${searchLimits.patternChars} characters`);
  const path = workspacePath(str(args.path, '.'));
  const run = await execInContainer(options, searchCommand(pattern, path), (searchLimits.seconds + 5) * 1000, {
    head: gatewayLimits.searchOutputBytes,
    tail: 0,
  });
  const answer = searchAnswer({ exitCode: run.exitCode, stdout: run.stdout.text(), stderr: run.stderr.text() });
  await call.record({ tool: name, pattern: pattern.slice(0, 200), path, hits: answer.hits, exitCode: run.exitCode, durationMs: Date.now() - started });
  return text(answer.text, answer.isError);
}

/** edit_file and write_file: grounded (the file read first), never through a link, bounded. */
async function writeTool(call: ToolCall): Promise<ToolAnswer> {
  const { name, args, started, options } = call;
  const workspace = options.workspace;
  const path = workspacePath(str(args.path));
  if (options.readOnly) return await call.refuse(name, `${name}: this session reviews; its workspace is read-only`, { path });
  const kind = await lstatNoFollow(workspace, path);
  if (kind !== undefined && kind !== 'file')
    return await call.refuse(
      name,
      `${name}: ${path} is ${kind === 'link' ? 'a symbolic link; file tools do not follow links' : `not a regular file (${kind})`}`,
      { path },
    );
  const refusal = editGroundingRefusal(call.session.state.filesRead, path, kind === 'file');
  if (refusal) return await call.refuse(name, refusal, { path });
  let content: string;
  if (name === 'edit_file') {
    const find = str(args.find);
    const before = (await readFileNoFollow(workspace, path, gatewayLimits.readBytes)).toString('utf8');
    if (find === '' || !before.includes(find)) return await call.refuse(name, `edit_file: the text to find is not in ${path}`, { path });
    content = before.split(find).join(str(args.replace));
  } else content = str(args.content);
  if (Buffer.byteLength(content) > gatewayLimits.writeBytes)
    return await call.refuse(name, `${name}: ${path} would be more than ${gatewayLimits.writeBytes} bytes`, { path });
  const owner = fileOwner();
  await writeFileNoFollow(workspace, path, content, owner ? { owner } : {});
  note(call, { kind: 'edit', file: path });
  await call.record({ tool: name, path, durationMs: Date.now() - started });
  return text(`${name === 'edit_file' ? 'edited' : 'wrote'} ${path}`);
}

/** run_command: grounded, behind the circuit breaker, in the session's (or its command) container, output capped. */
async function runCommandTool(call: ToolCall): Promise<ToolAnswer> {
  const { name, args, started, options } = call;
  const command = str(args.command);
  const grounding = commandGroundingRefusal(options.rules, call.session.state.filesRead, command);
  if (grounding) return await call.refuse(name, grounding, { command });
  const breaker = breakerRefusal(call.session.state, command);
  if (breaker) {
    call.session.state = { ...call.session.state, ...markTriggered(call.session.state) };
    return await call.refuse(name, breaker, { command });
  }
  const asked = Number(args.timeoutMs ?? options.commandTimeoutMs ?? 120_000);
  const timeoutMs = Math.min(Number.isFinite(asked) && asked > 0 ? asked : 120_000, 600_000);
  const target = options.commandContainer ? await options.commandContainer() : options.containerId();
  const result = await execInContainer(
    options,
    ['sh', '-c', command],
    timeoutMs,
    { head: gatewayLimits.outputHeadBytes, tail: gatewayLimits.outputTailBytes },
    target,
  );
  note(call, { kind: 'command-result', command, exitCode: result.exitCode });
  const output = result.output.text();
  const fingerprint = createHash('sha256').update(output).digest('hex').slice(0, 16);
  const dropped = result.output.dropped;
  await call.record({
    tool: name,
    command,
    exitCode: result.exitCode,
    durationMs: Date.now() - started,
    outputFingerprint: fingerprint,
    outputBytes: result.output.total,
    ...(dropped > 0 ? { outputDroppedBytes: dropped } : {}),
  });
  const notice =
    dropped > 0
      ? `output truncated: ${dropped} bytes dropped (kept the first ${gatewayLimits.outputHeadBytes} and the last ${gatewayLimits.outputTailBytes} bytes)\n`
      : '';
  return text(`exit ${result.exitCode}\n${notice}${output}`, result.exitCode !== 0);
}

/** One handler per tool. */
export const toolHandlers: Record<ToolName, ToolHandler> = {
  read_file: readFileTool,
  list_files: listFilesTool,
  search: searchTool,
  edit_file: writeTool,
  write_file: writeTool,
  run_command: runCommandTool,
};

/**
 * Runs argv in the session container (or `id`'s); stdout and stderr are read frame by frame
 * into capped buffers, so a flood costs the worker a fixed amount of memory.
 */
async function execInContainer(
  options: { docker: Docker; user: string; containerId: () => string | undefined },
  cmd: string[],
  timeoutMs: number,
  caps: { head: number; tail: number },
  id = options.containerId(),
): Promise<{ exitCode: number; stdout: CappedOutput; stderr: CappedOutput; output: CappedOutput }> {
  if (!id) throw new Error('the session container is not running');
  const exec = await options.docker.getContainer(id).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, WorkingDir: '/workspace', User: options.user });
  const stream = await exec.start({ hijack: true, stdin: false });
  const streams = {
    stdout: new CappedOutput(caps.head, caps.tail),
    stderr: new CappedOutput(caps.head, caps.tail),
    output: new CappedOutput(caps.head, caps.tail),
  };
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
