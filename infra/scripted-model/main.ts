/**
 * The scripted model endpoint from the command line, for demos:
 *   node --import tsx infra/scripted-model/main.ts --script file.json [--port N] [--socket PATH]
 * Prints where it listens, then one line per request; stops on Ctrl-C.
 */
import { parseArgs } from 'node:util';
import { onceStopRequested } from '../signals';
import { ScriptError } from './script';
import { startScriptedModel, type RecordedRequest } from './server';

const usage = 'usage: node --import tsx infra/scripted-model/main.ts --script FILE.json [--port N] [--socket PATH]\n';

function describe(request: RecordedRequest): string {
  const where = request.conversation === undefined ? '' : ` conversation ${request.conversation} turn ${(request.turn ?? 0) + 1}`;
  const usage = request.usage
    ? ` usage in=${request.usage.inputTokens} out=${request.usage.outputTokens} cache-read=${request.usage.cacheReadTokens} cache-write=${request.usage.cacheWriteTokens}`
    : '';
  const query = request.query ? `?${request.query}` : '';
  const why = request.message ? ` — ${request.message}` : '';
  return `#${request.index} ${request.method} ${request.path}${query} ${request.status} ${request.outcome}${request.stream ? ' (stream)' : ''} model=${request.model ?? '-'}${where}${usage}${why}\n`;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { script: { type: 'string' }, port: { type: 'string' }, socket: { type: 'string' }, help: { type: 'boolean' } },
  });
  if (values.help || values.script === undefined) {
    process.stderr.write(usage);
    return values.help ? 0 : 2;
  }
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port < 65536)) {
    process.stderr.write(`--port: "${values.port}" is not a TCP port\n${usage}`);
    return 2;
  }
  const model = await startScriptedModel({
    script: values.script,
    port,
    socketPath: values.socket,
    onRequest: (request) => process.stdout.write(describe(request)),
  });
  if (model.url) process.stdout.write(`scripted model listening on ${model.url} (ANTHROPIC_BASE_URL=${model.url}, OpenAI base URL ${model.url}/v1)\n`);
  if (model.socketPath) process.stdout.write(`scripted model listening on unix socket ${model.socketPath}\n`);
  await onceStopRequested();
  await model.close();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(error instanceof ScriptError ? `${error.message}\n` : `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
