import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Docker from 'dockerode';
import { startGateway, type GatewayHandle } from '../../activities/gateways/tool-gateway';

const shim = resolve(__dirname, '../../images/shared/tarmac-mcp');

/** The tool gateway reached the way a harness CLI reaches it: an MCP client over the stdio shim. */
describe('tool gateway through the stdio MCP shim', { timeout: 60_000 }, () => {
  let gateway: GatewayHandle;
  let client: Client;
  let workspace: string;
  before(async () => {
    const root = mkdtempSync(join(tmpdir(), 'tarmac-gateway-'));
    workspace = join(root, 'workspace');
    mkdirSync(workspace);
    writeFileSync(join(workspace, 'app.js'), 'module.exports = 1;\n');
    gateway = await startGateway({
      // A long path on purpose: unix socket paths are limited to ~107 bytes.
      dir: join(root, 'a-long-directory-name-'.repeat(6), 'gateway'),
      workspace,
      docker: new Docker(),
      containerId: () => undefined,
      user: '1000:1000',
      rules: { groundedCommands: ['npm run dev'], groundingFiles: ['package.json'] },
    });
    client = new Client({ name: 'test', version: '1' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [shim], env: { TARMAC_GATEWAY_SOCKET: gateway.socketPath } }));
  });
  after(async () => {
    await client?.close();
    await gateway?.close();
  });

  it('lists the platform tools', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ['edit_file', 'list_files', 'read_file', 'run_command', 'search', 'write_file']);
  });

  it('refuses an edit of a file not read first, then allows it after a read', async () => {
    const refused = await client.callTool({ name: 'edit_file', arguments: { path: 'app.js', find: '1', replace: '2' } });
    assert.equal(refused.isError, true);
    assert.match(JSON.stringify(refused.content), /read app\.js before editing it/);
    assert.equal(readFileSync(join(workspace, 'app.js'), 'utf8'), 'module.exports = 1;\n', 'nothing changed');
    await client.callTool({ name: 'read_file', arguments: { path: 'app.js' } });
    const edited = await client.callTool({ name: 'edit_file', arguments: { path: 'app.js', find: '1', replace: '2' } });
    assert.notEqual(edited.isError, true);
    assert.equal(readFileSync(join(workspace, 'app.js'), 'utf8'), 'module.exports = 2;\n');
  });

  it('refuses paths outside the workspace and the .git directory', async () => {
    for (const path of ['../etc/passwd', '.git/config']) {
      const result = await client.callTool({ name: 'read_file', arguments: { path } });
      assert.equal(result.isError, true, path);
    }
  });

  it('refuses a grounded command before its grounding file was read, naming it', async () => {
    const result = await client.callTool({ name: 'run_command', arguments: { command: 'npm run dev' } });
    assert.equal(result.isError, true);
    assert.match(JSON.stringify(result.content), /read package\.json before running/);
    assert.ok(gateway.state().refusals.some((refusal) => refusal.tool === 'run_command'));
  });
});

describe('tool gateway: the tool budget from the recipe', { timeout: 60_000 }, () => {
  it('refuses every call beyond maxToolCalls', async () => {
    const root = mkdtempSync(join(tmpdir(), 'tarmac-gateway-'));
    const workspace = join(root, 'workspace');
    mkdirSync(workspace);
    writeFileSync(join(workspace, 'a.txt'), 'a\n');
    const gateway = await startGateway({
      dir: join(root, 'gateway'),
      workspace,
      docker: new Docker(),
      containerId: () => undefined,
      user: '1000:1000',
      rules: { groundedCommands: [], groundingFiles: [] },
      maxToolCalls: 2,
    });
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [shim], env: { TARMAC_GATEWAY_SOCKET: gateway.socketPath } }));
    try {
      for (let call = 1; call <= 2; call += 1) assert.notEqual((await client.callTool({ name: 'read_file', arguments: { path: 'a.txt' } })).isError, true);
      const third = await client.callTool({ name: 'read_file', arguments: { path: 'a.txt' } });
      assert.equal(third.isError, true);
      assert.match(JSON.stringify(third.content), /tool budget: the session has used its 2 tool calls/);
    } finally {
      await client.close();
      await gateway.close();
    }
  });
});
