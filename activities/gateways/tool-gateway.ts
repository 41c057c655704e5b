import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { emptyBreaker } from '../../policies/circuit-breaker';
import { ConfinedPathError } from '../stores/confined-fs';
import { containerUser } from '../git/git';
import { listenPrivately } from './private-socket';
import { writeFileAtomic } from '../stores/run-store';
import { text, toolHandlers, tools, type GatewayState, type ToolName, type ToolOptions } from './tool-gateway-tools';

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
interface GatewayOptions extends ToolOptions {
  /** Directory holding the socket, the persisted state and the telemetry (mounted into the container). */
  dir: string;
  /** Tool calls the session may make in all (default unlimited); beyond it every call is refused. */
  maxToolCalls?: number;
}

export type { GatewayState } from './tool-gateway-tools';

export interface GatewayHandle {
  socketPath: string;
  /** The directory holding the socket: mount it (not the socket file) so a re-created socket is seen. */
  socketDir: string;
  state(): GatewayState;
  close(): Promise<void>;
}

export async function startGateway(options: GatewayOptions): Promise<GatewayHandle> {
  mkdirSync(options.dir, { recursive: true });
  const statePath = join(options.dir, 'state.json');
  const telemetryPath = join(options.dir, 'telemetry.jsonl');
  const session: { state: GatewayState } = {
    state: existsSync(statePath) ? (JSON.parse(readFileSync(statePath, 'utf8')) as GatewayState) : { ...emptyBreaker(), toolCalls: 0, refusals: [] },
  };
  const persist = () => writeFileAtomic(statePath, JSON.stringify(session.state));

  async function record(entry: Record<string, unknown>): Promise<void> {
    session.state.toolCalls += 1;
    await persist();
    await appendFile(telemetryPath, `${JSON.stringify({ at: new Date().toISOString(), ...entry })}\n`);
  }
  async function refuse(tool: string, reason: string, extra: Record<string, unknown> = {}) {
    session.state.refusals.push({ tool, reason });
    await record({ tool, refused: reason, ...extra });
    return text(reason, true);
  }

  /** A tool call: refused past the tool budget, else answered by its tool's handler (tool-gateway-tools.ts). */
  async function call(name: string, args: Record<string, unknown>) {
    const started = Date.now();
    if (options.maxToolCalls !== undefined && session.state.toolCalls >= options.maxToolCalls) {
      return await refuse(name, `tool budget: the session has used its ${options.maxToolCalls} tool calls`);
    }
    if (!Object.hasOwn(toolHandlers, name)) return text(`unknown tool ${name}`, true);
    return await toolHandlers[name as ToolName]({ name, args, started, options, session, record, refuse });
  }

  function serve(socket: import('node:net').Socket): void {
    const server = new Server({ name: 'tarmac-gateway', version: '0.1.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools.map((tool) => ({ ...tool, inputSchema: { ...tool.inputSchema } })) }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      try {
        return await call(request.params.name, request.params.arguments ?? {});
      } catch (error) {
        // A path the confinement refused is a refusal the session's record shows, not a crash.
        if (error instanceof ConfinedPathError)
          return await refuse(request.params.name, error.message, { path: error.path }).catch(() => text(error.message, true));
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
    state: () => session.state,
    close: () => socket.close(),
  };
}
