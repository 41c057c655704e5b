/**
 * The real agent CLIs (the pinned binaries of scripts/fetch-agent-clis.sh) in a session's
 * sandbox — network none, read-only root, no capabilities, uid 1000 — reaching the scripted
 * model endpoint only through the forwarder and the model gateway, configured the way
 * sessions.ts is to configure them: a base URL on the container's loopback and a
 * placeholder key (the gateway puts the worker's key in its place).
 */
import assert from 'node:assert/strict';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Docker from 'dockerode';
import { demuxDockerLog } from '../../activities/containers/containers';
import { agentUser } from '../../activities/git/git';
import { startModelGateway, type ModelGatewayHandle, type ModelGatewayOptions } from '../../activities/gateways/model-gateway';
import { loadPricing } from '../../core/node/recipes';
import { cachedAgentCli } from '../../infra/agent-clis';
import type { Script } from '../../infra/scripted-model/script';
import { startScriptedModel, type ScriptedModel } from '../../infra/scripted-model/server';

const image = 'tarmac/agent-script:bookworm';
const shared = resolve(__dirname, '../../images/shared');
const realKey = 'sk-real-worker-key-never-in-the-container-7f3a9c';
const port = 8417;
const claude = cachedAgentCli('claude-code');
const codex = cachedAgentCli('codex');
const docker = new Docker();

/** A directory the container user owns (the workspace, the CLI's home). */
function ownedDir(root: string, name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  if (process.getuid?.() === 0) chownSync(dir, agentUser.uid, agentUser.gid);
  return dir;
}

async function runSession(spec: {
  cli: string;
  binds: string[];
  env: string[];
  script: string;
  socketDir: string;
}): Promise<{ exitCode: number; stdout: string; stderr: string; inspect: string }> {
  const container = await docker.createContainer({
    Image: image,
    Entrypoint: ['sh', '-c', spec.script],
    User: `${agentUser.uid}:${agentUser.gid}`,
    Env: ['HOME=/tmp', `TARMAC_MODEL_PORT=${port}`, 'PATH=/opt/cli:/usr/local/bin:/usr/bin:/bin', ...spec.env],
    WorkingDir: '/workspace',
    Labels: { 'tarmac.test': 'model-gateway-real-clis' },
    HostConfig: {
      NetworkMode: 'none',
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Tmpfs: { '/tmp': 'rw,exec,nosuid,size=256m' },
      Binds: [`${spec.socketDir}:/tarmac/gateway:rw`, `${shared}:/opt/tarmac/shared:ro`, `${dirname(spec.cli)}:/opt/cli:ro`, ...spec.binds],
      Memory: 2048 * 1024 * 1024,
      PidsLimit: 256,
    },
  });
  try {
    await container.start();
    const timer = setTimeout(() => void container.kill().catch(() => undefined), 150_000);
    const exit = await container.wait();
    clearTimeout(timer);
    const { stdout, stderr } = demuxDockerLog(await container.logs({ stdout: true, stderr: true }));
    return { exitCode: exit.StatusCode as number, stdout, stderr, inspect: JSON.stringify(await container.inspect()) };
  } finally {
    await container.remove({ force: true });
  }
}

function everythingWritten(dir: string): string {
  return readdirSync(dir)
    .map((name) => readFileSync(join(dir, name), 'utf8'))
    .join('\n');
}

describe('real CLIs through the forwarder and the model gateway (network none)', { timeout: 600_000 }, () => {
  const gateways: ModelGatewayHandle[] = [];
  const models: ScriptedModel[] = [];
  after(async () => {
    for (const gateway of gateways) await gateway.close();
    for (const model of models) await model.close();
  });

  async function setUp(script: Script, options: Pick<ModelGatewayOptions, 'provider' | 'budget'>) {
    const root = mkdtempSync(join(tmpdir(), 'tarmac-real-cli-'));
    const model = await startScriptedModel({ script });
    models.push(model);
    const dir = join(root, 'model-gateway');
    const gateway = await startModelGateway({ dir, upstream: model.url!, apiKey: realKey, pricing: loadPricing(), ...options });
    gateways.push(gateway);
    return { root, model, gateway, dir, workspace: ownedDir(root, 'workspace') };
  }

  describe('Claude Code', () => {
    // Fails, never skips: setup fetches the CLIs, and a missing one must not pass as a skip.
    before(() => assert.ok(claude, 'Claude Code is not in the cache; run `bash scripts/fetch-agent-clis.sh`'));
    const script: Script = {
      version: 1,
      conversations: [
        {
          turns: [
            {
              text: 'Writing the proof.',
              toolCalls: [{ name: 'Bash', input: { command: 'echo claude-through-the-gateway > /workspace/proof.txt', description: 'Write the proof' } }],
              usage: { inputTokens: 1000, outputTokens: 50, cacheReadTokens: 200, cacheWriteTokens: 30 },
            },
            { text: 'Done.', usage: { inputTokens: 1100, outputTokens: 20, cacheReadTokens: 400 } },
          ],
        },
      ],
    };
    const env = [`ANTHROPIC_BASE_URL=http://127.0.0.1:${port}`, 'ANTHROPIC_API_KEY=tarmac-model-gateway', 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1'];
    const command = 'exec /opt/tarmac/shared/tarmac-run claude -p --model claude-sonnet-4-5 --output-format json --allowedTools Bash < /workspace/prompt.md';

    it('runs its tool call and answers; the gateway meters exactly the scripted usage; the key is nowhere the agent can see', async () => {
      const { model, gateway, dir, workspace } = await setUp(script, { provider: 'anthropic', budget: { left: { tokens: 1_000_000, costUsd: 10 } } });
      writeFileSync(join(workspace, 'prompt.md'), 'Write the proof file.\n');
      const run = await runSession({ cli: claude!, socketDir: gateway.socketDir, env, script: command, binds: [`${workspace}:/workspace:rw`] });
      assert.equal(run.exitCode, 0, `stdout: ${run.stdout}\nstderr: ${run.stderr}`);
      const report = JSON.parse(run.stdout.trim().split('\n').pop()!);
      assert.deepEqual([report.is_error, report.result], [false, 'Done.']);
      assert.equal(readFileSync(join(workspace, 'proof.txt'), 'utf8'), 'claude-through-the-gateway\n');

      const turns = model.requests.filter((request) => request.outcome === 'turn');
      assert.equal(turns.length, 2);
      for (const request of model.requests) assert.equal(request.headers['x-api-key'], realKey);
      const usage = gateway.usage();
      // 1000+200+30 and 1100+400 input; $3 / $0.30 / $3.75 in, $15 out per million (claude-sonnet-4-5).
      assert.deepEqual(
        [usage.inputTokens, usage.outputTokens, usage.cacheReadInputTokens, usage.cacheCreationInputTokens, usage.costUsd],
        [2730, 70, 600, 30, 0.0076425],
        JSON.stringify(usage),
      );
      assert.equal(usage.otherRefusals, 0, `nothing the CLI asked for was refused: ${everythingWritten(dir)}`);
      assert.equal(
        report.usage.input_tokens + report.usage.cache_read_input_tokens + report.usage.cache_creation_input_tokens,
        usage.inputTokens,
        "the CLI's own report agrees",
      );
      assert.ok(!run.inspect.includes(realKey), 'not in docker inspect');
      assert.ok(!run.stdout.includes(realKey) && !run.stderr.includes(realKey), 'not in the output');
      await gateway.close();
      assert.ok(!everythingWritten(dir).includes(realKey), 'not in the transcript or the counters');
    });

    it('a spent budget refuses the next request; the CLI ends with the gateway message', async () => {
      const { model, gateway, workspace } = await setUp(script, { provider: 'anthropic', budget: { left: { tokens: 1000, costUsd: 10 } } });
      writeFileSync(join(workspace, 'prompt.md'), 'Write the proof file.\n');
      const run = await runSession({ cli: claude!, socketDir: gateway.socketDir, env, script: command, binds: [`${workspace}:/workspace:rw`] });
      const report = JSON.parse(run.stdout.trim().split('\n').pop()!);
      assert.equal(report.is_error, true, run.stdout);
      assert.match(report.result, /tarmac: run budget exhausted \(tokens: 1280 used of the 1000 this session may use\)/);
      assert.equal(model.requests.filter((request) => request.outcome === 'turn').length, 1, 'the second turn never reached the model');
      const usage = gateway.usage();
      assert.ok(usage.budgetRefusals >= 1);
      assert.equal(usage.inputTokens, 1230);
    });

    it("a model off the operator's list: refused in Anthropic's shape, nothing reaches the model or is charged, the CLI ends naming it", async () => {
      const { model, gateway, workspace } = await setUp(script, { provider: 'anthropic', budget: { left: { tokens: 1_000_000, costUsd: 10 } } });
      writeFileSync(join(workspace, 'prompt.md'), 'Write the proof file.\n');
      const unlisted = command.replace('--model claude-sonnet-4-5', '--model claude-unlisted-9');
      const run = await runSession({ cli: claude!, socketDir: gateway.socketDir, env, script: unlisted, binds: [`${workspace}:/workspace:rw`] });
      const report = JSON.parse(run.stdout.trim().split('\n').pop()!);
      assert.equal(report.is_error, true, run.stdout);
      // Claude Code reads a 404 for a model as the provider's "no such model" and says so, naming it.
      assert.match(report.result, /issue with the selected model \(claude-unlisted-9\)/);
      assert.equal(model.requests.filter((request) => request.outcome === 'turn').length, 0, 'no turn reached the model');
      const usage = gateway.usage();
      assert.ok((usage.modelRefusals ?? 0) >= 1, JSON.stringify(usage));
      assert.equal(usage.lastModelRefusal?.model, 'claude-unlisted-9');
      assert.deepEqual([usage.costUsd, usage.byModel['claude-unlisted-9']], [0, undefined], 'nothing charged for it');
    });
  });

  describe('Codex', () => {
    before(() => assert.ok(codex, 'Codex is not in the cache; run `bash scripts/fetch-agent-clis.sh`'));
    const script: Script = {
      version: 1,
      conversations: [
        {
          turns: [
            {
              text: 'Writing the proof.',
              toolCalls: [{ name: 'exec_command', input: { cmd: 'echo codex-through-the-gateway > /workspace/proof.txt' } }],
              usage: { inputTokens: 2000, outputTokens: 60, cacheReadTokens: 500 },
            },
            { text: 'Done.', usage: { inputTokens: 300, outputTokens: 10, cacheReadTokens: 2500 } },
          ],
        },
      ],
    };

    it('runs its tool call and answers over the Responses API; the gateway meters exactly the scripted usage', async () => {
      const { model, gateway, dir, root, workspace } = await setUp(script, { provider: 'openai', budget: { left: { tokens: 1_000_000, costUsd: 10 } } });
      const home = ownedDir(root, 'codex-home');
      writeFileSync(
        join(home, 'config.toml'),
        [
          'model = "gpt-5-mini"',
          'model_provider = "tarmac"',
          '',
          '[model_providers.tarmac]',
          'name = "Tarmac model gateway"',
          `base_url = "http://127.0.0.1:${port}/v1"`,
          'env_key = "TARMAC_MODEL_GATEWAY_KEY"',
          'wire_api = "responses"',
          '',
        ].join('\n'),
      );
      writeFileSync(join(workspace, 'prompt.md'), 'Write the proof file.\n');
      const run = await runSession({
        cli: codex!,
        socketDir: gateway.socketDir,
        env: ['CODEX_HOME=/codex-home', 'TARMAC_MODEL_GATEWAY_KEY=tarmac-model-gateway'],
        script: 'exec /opt/tarmac/shared/tarmac-run codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox < /workspace/prompt.md',
        binds: [`${workspace}:/workspace:rw`, `${home}:/codex-home:rw`],
      });
      assert.equal(run.exitCode, 0, `stdout: ${run.stdout}\nstderr: ${run.stderr}\ntranscript: ${everythingWritten(dir).slice(0, 4000)}`);
      assert.equal(readFileSync(join(workspace, 'proof.txt'), 'utf8'), 'codex-through-the-gateway\n');
      const turns = model.requests.filter((request) => request.outcome === 'turn');
      assert.equal(turns.length, 2);
      for (const request of model.requests) assert.equal(request.headers.authorization, `Bearer ${realKey}`);
      const usage = gateway.usage();
      // Responses input includes the cached part: 2000+500 and 300+2500. gpt-5-mini: $0.25 / $0.025 in, $2 out per million.
      assert.deepEqual([usage.inputTokens, usage.outputTokens, usage.cacheReadInputTokens, usage.costUsd], [5300, 70, 3000, 0.00079], JSON.stringify(usage));
      assert.equal(usage.otherRefusals, 0, `nothing the CLI asked for was refused: ${everythingWritten(dir).slice(0, 4000)}`);
      assert.ok(!run.inspect.includes(realKey), 'not in docker inspect');
      await gateway.close();
      assert.ok(!everythingWritten(dir).includes(realKey), 'not in the transcript or the counters');
    });

    it('a spent budget refuses the next request; the CLI fails the turn with the gateway message', async () => {
      const { model, gateway, root, workspace } = await setUp(script, { provider: 'openai', budget: { left: { tokens: 1000, costUsd: 10 } } });
      const home = ownedDir(root, 'codex-home');
      writeFileSync(
        join(home, 'config.toml'),
        [
          'model = "gpt-5-mini"',
          'model_provider = "tarmac"',
          '',
          '[model_providers.tarmac]',
          'name = "Tarmac model gateway"',
          `base_url = "http://127.0.0.1:${port}/v1"`,
          'env_key = "TARMAC_MODEL_GATEWAY_KEY"',
          'wire_api = "responses"',
          '',
        ].join('\n'),
      );
      writeFileSync(join(workspace, 'prompt.md'), 'Write the proof file.\n');
      const started = Date.now();
      const run = await runSession({
        cli: codex!,
        socketDir: gateway.socketDir,
        env: ['CODEX_HOME=/codex-home', 'TARMAC_MODEL_GATEWAY_KEY=tarmac-model-gateway'],
        script: 'exec /opt/tarmac/shared/tarmac-run codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox < /workspace/prompt.md',
        binds: [`${workspace}:/workspace:rw`, `${home}:/codex-home:rw`],
      });
      assert.ok(Date.now() - started < 60_000, 'the CLI did not retry for minutes');
      assert.notEqual(run.exitCode, 0, run.stdout);
      assert.match(run.stdout, /tarmac: run budget exhausted \(tokens: 2560 used of the 1000 this session may use\)/);
      assert.equal(model.requests.filter((request) => request.outcome === 'turn').length, 1, 'the second turn never reached the model');
      assert.ok(gateway.usage().budgetRefusals >= 1);
    });
  });
});
