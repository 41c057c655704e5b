import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import type { Script } from '../../infra/scripted-model/script';
import { startScriptedModel } from '../../infra/scripted-model/server';
import { postJson } from '../helpers/model-client';

const script: Script = {
  version: 1,
  conversations: [{ turns: [{ toolCalls: [{ name: 'Bash', input: { command: 'ls' } }], usage: { inputTokens: 5, outputTokens: 1 } }] }],
};
const body = { model: 'claude-sonnet-4-5', max_tokens: 10, tools: [{ name: 'Bash', input_schema: {} }], messages: [{ role: 'user', content: 'hi' }] };

/** POST over a unix socket (fetch cannot). */
function postOverSocket(socketPath: string, path: string, payload: unknown): Promise<{ status: number; json: any }> {
  return new Promise((done, fail) => {
    const text = JSON.stringify(payload);
    const req = request({ socketPath, path, method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'key-from-gateway' } }, (res) => {
      let data = '';
      res.on('data', (chunk: Buffer) => (data += chunk.toString()));
      res.on('end', () => done({ status: res.statusCode ?? 0, json: JSON.parse(data) }));
    });
    req.on('error', fail);
    req.end(text);
  });
}

describe('scripted model: the server', () => {
  it('listens on a unix socket and a TCP port at once, records every request in order, and removes the socket on close', async () => {
    const socketPath = join(mkdtempSync(join(tmpdir(), 'tarmac-sm-')), 'model.sock');
    const model = await startScriptedModel({ script, socketPath, port: 0 });
    try {
      assert.match(model.url!, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(model.socketPath, socketPath);
      const overSocket = await postOverSocket(socketPath, '/v1/messages', body);
      assert.deepEqual([overSocket.status, overSocket.json.content[0].name], [200, 'Bash']);
      const overTcp = await postJson(`${model.url}/v1/messages?beta=true`, body, { 'anthropic-version': '2023-06-01' });
      assert.deepEqual(overTcp.json.content, overSocket.json.content);
      const missing = await fetch(`${model.url}/v1/complete`, { method: 'POST', body: '{}' });
      assert.equal(missing.status, 404);
      const models = (await (await fetch(`${model.url}/v1/models`)).json()) as any;
      assert.equal(models.object, 'list');
      assert.deepEqual(
        model.requests.map((r) => [r.index, r.method, r.path, r.query, r.api, r.outcome, r.status]),
        [
          [0, 'POST', '/v1/messages', '', 'anthropic-messages', 'turn', 200],
          [1, 'POST', '/v1/messages', 'beta=true', 'anthropic-messages', 'turn', 200],
          [2, 'POST', '/v1/complete', '', 'unknown', 'not-found', 404],
          [3, 'GET', '/v1/models', '', 'models', 'served', 200],
        ],
      );
      assert.equal(model.requests[0]!.headers['x-api-key'], 'key-from-gateway', 'headers are recorded as received (a gateway test checks the key arrived)');
      assert.deepEqual(model.requests[1]!.body, body);
      assert.deepEqual(model.requests[1]!.usage, { inputTokens: 5, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 });
    } finally {
      await model.close();
    }
    assert.equal(existsSync(socketPath), false);
  });

  it('reads gzip-compressed request bodies', async () => {
    const model = await startScriptedModel({ script });
    try {
      const response = await fetch(`${model.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body: gzipSync(JSON.stringify(body)),
      });
      assert.equal(response.status, 200);
      assert.equal(((await response.json()) as any).content[0].name, 'Bash');
    } finally {
      await model.close();
    }
  });

  it('refuses a free-form tool input on Chat Completions, which cannot carry it', async () => {
    const model = await startScriptedModel({
      script: { version: 1, conversations: [{ turns: [{ toolCalls: [{ name: 'apply_patch', text: 'patch' }], usage: { inputTokens: 1, outputTokens: 1 } }] }] },
    });
    try {
      const reply = await postJson(`${model.url}/v1/chat/completions`, {
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ type: 'function', function: { name: 'apply_patch' } }],
      });
      assert.equal(reply.status, 400);
      assert.match(reply.json.error.message, /tool call "apply_patch" has free-form text input, which Chat Completions cannot carry/);
    } finally {
      await model.close();
    }
  });

  it('runs from the command line for demos: prints its URL, logs each request, stops on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tarmac-sm-cli-'));
    const file = join(dir, 'script.json');
    writeFileSync(file, JSON.stringify(script));
    const root = resolve(__dirname, '..', '..');
    const child = spawn(process.execPath, ['--import', 'tsx', 'infra/scripted-model/main.ts', '--script', file, '--port', '0'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    try {
      const deadline = Date.now() + 30_000;
      while (!/listening on (http:\/\/127\.0\.0\.1:\d+)/.test(output) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
      assert.ok(url, `no URL printed: ${output}`);
      await postJson(`${url}/v1/messages`, { ...body, stream: true });
      while (!output.includes('#0 ') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.match(output, /#0 POST \/v1\/messages 200 turn \(stream\) model=claude-sonnet-4-5 conversation #0 turn 1 usage in=5 out=1/);
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0);
  });

  it('exits 1 from the command line on a bad script, naming the field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tarmac-sm-cli-'));
    const file = join(dir, 'script.json');
    writeFileSync(file, JSON.stringify({ version: 1, conversations: [{ turns: [{ text: 'x', usage: { inputTokens: 1, outputTokens: 1, cached: 3 } }] }] }));
    const child = spawn(process.execPath, ['--import', 'tsx', 'infra/scripted-model/main.ts', '--script', file], {
      cwd: resolve(__dirname, '..', '..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let errors = '';
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.on('exit', (c) => done(c)));
    assert.equal(code, 1);
    assert.equal(
      errors,
      `${file}: conversations[0].turns[0].usage.cached is not a known field (valid fields: inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens)\n`,
    );
  });
});
