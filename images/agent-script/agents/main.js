'use strict';
// Deterministic agents of the `script` harness. The model name picks the behaviour
// (`script#reviewer`, `script#fixer`, `script#hang`…). They follow the agent container
// contract: read /tarmac/task.json, write /tarmac/out/result.json, spend 0 tokens.
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const taskFile = process.env.TARMAC_TASK_FILE || '/tarmac/task.json';
const outDir = process.env.TARMAC_OUT_DIR || '/tarmac/out';
const workspace = process.env.TARMAC_WORKSPACE || '/workspace';
let usage = { inputTokens: 0, outputTokens: 0, costUsd: 0 };

function firstTurn() {
  // The marker the session classifier looks for: the agent got as far as its first turn.
  process.stdout.write('[tarmac] first-turn\n');
}

function deliver(result) {
  fs.mkdirSync(outDir, { recursive: true });
  const temp = path.join(outDir, `.result.${process.pid}.tmp`);
  fs.writeFileSync(temp, JSON.stringify({ usage, ...result }, null, 2));
  fs.renameSync(temp, path.join(outDir, 'result.json'));
  process.stdout.write(`[tarmac] delivered: ${result.status}\n`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Static checks a reviewer can make without a model. */
const rules = [
  { rule: 'debugger-statement', pattern: /\bdebugger\b/, severity: 'blocking', message: 'debugger statement left in code' },
  { rule: 'fixme', pattern: /\b(FIXME|XXX)\b/, severity: 'major', message: 'unresolved FIXME/XXX marker' },
  { rule: 'todo', pattern: /\bTODO\b/, severity: 'minor', message: 'TODO marker' },
  { rule: 'console-log', pattern: /console\.log\(/, severity: 'minor', message: 'console.log left in code' },
];

function review(task) {
  const files = Array.isArray(task.files) ? task.files : [];
  const findings = [];
  for (const file of files) {
    let text;
    try {
      text = fs.readFileSync(path.join(workspace, file), 'utf8');
    } catch {
      continue; // deleted in the diff
    }
    text.split('\n').forEach((line, index) => {
      for (const { rule, pattern, severity, message } of rules) {
        if (pattern.test(line)) findings.push({ file, line: index + 1, severity, rule, message });
      }
    });
  }
  return { status: 'ok', summary: `${findings.length} finding(s) in ${files.length} file(s)`, findings };
}

/** Applies the literal edits the task carries, then commits them: a fixer that really changes code. */
function fix(task) {
  const edits = Array.isArray(task.edits) ? task.edits : [];
  for (const { file, find, replace } of edits) {
    const target = path.join(workspace, file);
    const before = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : '';
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, find ? before.split(find).join(replace) : replace);
  }
  const git = (...args) => execFileSync('git', ['-C', workspace, ...args], { encoding: 'utf8' });
  git('add', '-A');
  const staged = git('diff', '--cached', '--name-only').trim();
  if (staged) git('-c', 'user.name=tarmac-script', '-c', 'user.email=script@tarmac.invalid', 'commit', '-q', '-m', task.commitMessage || 'tarmac: scripted fix');
  return { status: staged ? 'ok' : 'no-change', summary: staged ? `edited ${staged.split('\n').length} file(s)` : 'nothing to change' };
}

/** Keeps both sides of every conflict hunk (ours first), dropping the markers and any diff3 base. */
function unionResolve(text) {
  return text.replace(/^<<<<<<< [^\n]*\n([\s\S]*?)(?:^\|\|\|\|\|\|\| [^\n]*\n[\s\S]*?)?^=======\n([\s\S]*?)^>>>>>>> [^\n]*\n/gm, '$1$2');
}

/**
 * A conflict resolver without a model: for each conflicted file, the task's edit for
 * it if there is one, else the union of both sides; then stage and continue the rebase,
 * as often as it stops. `drop` skips the conflicted commit instead (a resolver that
 * silently loses work, for tests of the patch check).
 */
function resolve(task, drop) {
  const git = (...args) => execFileSync('git', ['-C', workspace, ...args], { encoding: 'utf8', env: { ...process.env, GIT_EDITOR: 'true' } });
  const rebasing = () => fs.existsSync(path.join(workspace, '.git', 'rebase-merge')) || fs.existsSync(path.join(workspace, '.git', 'rebase-apply'));
  const edits = Object.fromEntries((Array.isArray(task.edits) ? task.edits : []).map((edit) => [edit.file, edit.replace]));
  let resolved = 0;
  for (let round = 0; round < 50 && rebasing(); round += 1) {
    const files = git('diff', '--name-only', '--diff-filter=U').split('\n').filter(Boolean);
    if (drop) {
      try { git('rebase', '--skip'); } catch { /* stops again at the next conflict */ }
      continue;
    }
    for (const file of files) {
      const target = path.join(workspace, file);
      fs.writeFileSync(target, file in edits ? edits[file] : unionResolve(fs.readFileSync(target, 'utf8')));
      resolved += 1;
    }
    git('add', '-A');
    try { git('rebase', '--continue'); } catch { /* stopped at the next conflict */ }
  }
  return { status: rebasing() ? 'error' : 'ok', summary: rebasing() ? 'the rebase still stops' : `resolved ${resolved} file(s) and continued the rebase` };
}

/**
 * A minimal MCP client for the tool gateway at /tarmac/gateway/gateway.sock:
 * newline-delimited JSON-RPC, `initialize` then `tools/call`. It reconnects when the
 * gateway goes away (a worker restart) and waits for it to come back.
 */
class Gateway {
  constructor(path) {
    this.path = path;
    this.nextId = 1;
    this.socket = null;
    this.pending = new Map();
    this.buffer = '';
  }
  async open() {
    const deadline = Date.now() + 120000;
    for (;;) {
      try {
        await new Promise((resolve, reject) => {
          const socket = require('node:net').connect(this.path);
          socket.once('connect', () => { this.socket = socket; resolve(); });
          socket.once('error', reject);
          socket.on('data', (chunk) => this.receive(chunk));
          socket.on('close', () => {
            if (this.socket === socket) this.socket = null;
            for (const { reject: fail } of this.pending.values()) fail(new Error('gateway connection closed'));
            this.pending.clear();
          });
        });
        await this.send('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tarmac-script', version: '1' } });
        this.socket.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await sleep(500);
      }
    }
  }
  receive(chunk) {
    this.buffer += chunk.toString();
    let newline;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      if (!line.trim()) continue;
      const message = JSON.parse(line);
      const waiter = this.pending.get(message.id);
      if (waiter) { this.pending.delete(message.id); waiter.resolve(message); }
    }
  }
  send(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }
  async call(name, args) {
    for (let tries = 0; ; tries += 1) {
      try {
        if (!this.socket) await this.open();
        const response = await this.send('tools/call', { name, arguments: args });
        if (response.error) throw new Error(response.error.message);
        const text = (response.result.content || []).map((part) => part.text).join('');
        process.stdout.write(`[gateway] ${name} ${JSON.stringify(args).slice(0, 120)} → ${response.result.isError ? 'refused/failed' : 'ok'}\n`);
        return { text, isError: Boolean(response.result.isError) };
      } catch (error) {
        if (tries >= 3) throw error;
        this.socket = null;
      }
    }
  }
}

/** Agents that work only through the tool gateway (no direct file or shell access). */
async function throughGateway(behaviour, task) {
  const gateway = new Gateway(process.env.TARMAC_GATEWAY_SOCKET || '/tarmac/gateway/gateway.sock');
  const log = [];
  if (behaviour === 'gateway-fixer') {
    const edits = Array.isArray(task.edits) ? task.edits : [];
    for (const file of [...new Set(edits.map((edit) => edit.file))]) log.push(await gateway.call('read_file', { path: file }));
    for (const edit of edits) log.push(await gateway.call('edit_file', { path: edit.file, find: edit.find, replace: edit.replace }));
    const commit = await gateway.call('run_command', { command: 'git add -A && git -c user.name=tarmac-script -c user.email=script@tarmac.invalid commit -q -m "fix: through the gateway"' });
    return { status: commit.isError ? 'error' : 'ok', summary: log.concat(commit).map((entry) => entry.text.split('\n')[0]).join(' | ') };
  }
  if (behaviour === 'gateway-repeater') {
    // Re-runs the failing command, as a thrashing agent would; pauses before the third try.
    const command = task.command || 'make test';
    for (let run = 1; run <= 3; run += 1) {
      if (run === 3 && task.pauseMs) await sleep(Number(task.pauseMs));
      const result = await gateway.call('run_command', { command });
      log.push(`run ${run}: ${result.text.split('\n')[0]}`);
    }
    return { status: 'ok', summary: log.join(' | ') };
  }
  if (behaviour === 'gateway-eager-boot') {
    const result = await gateway.call('run_command', { command: 'npm run dev' });
    return { status: 'ok', summary: result.text };
  }
  throw new Error(`unknown gateway behaviour ${behaviour}`);
}

/**
 * An agent that does what model output may make any agent do: run the repository's own
 * script (`.attack/payload.sh`, from branch content) in its workspace before its work.
 * The security tests use it to poison the workspace's git config, hooks and attributes.
 */
function runPayload() {
  const payload = path.join(workspace, '.attack', 'payload.sh');
  if (fs.existsSync(payload)) execFileSync('sh', [payload], { cwd: workspace, stdio: 'inherit' });
}

async function main() {
  const behaviour = process.argv[2] || process.env.TARMAC_MODEL || 'reviewer';
  const attempt = Number(process.env.TARMAC_ATTEMPT || '1');
  if (behaviour === 'die-before-first-turn') process.exit(3);
  // Dies before its first turn on the first attempt only: a cold-start failure a respawn cures.
  if (behaviour === 'flaky-start' && attempt === 1) process.exit(3);
  const task = JSON.parse(fs.readFileSync(taskFile, 'utf8'));
  if (task.reportUsage) usage = { ...usage, ...task.reportUsage };
  firstTurn();
  // A scenario's crashAttempts: crash after the first turn (no result) on the session's first N attempts.
  if (Number.isInteger(task.crashAttempts) && attempt <= task.crashAttempts) {
    process.stderr.write(`scripted crash (attempt ${attempt} of the first ${task.crashAttempts})\n`);
    process.exit(1);
  }
  // Questions first: with `ask`, the agent asks before it works, and works once its prompt carries
  // the answers (`Answer from the operator: …`); an edit's `{{answer}}` becomes the first answer.
  if (Array.isArray(task.ask) && task.ask.length > 0) {
    const answers = [...String(task.prompt || '').matchAll(/^Answer from the operator: (.*)$/gm)].map((match) => match[1]);
    if (answers.length === 0) return deliver({ status: 'ok', summary: `${task.ask.length} question(s) before I start`, questions: task.ask });
    task.edits = (Array.isArray(task.edits) ? task.edits : []).map((edit) => ({ ...edit, replace: String(edit.replace).split('{{answer}}').join(answers[0]) }));
  }
  switch (behaviour) {
    case 'reviewer':
    case 'reviewer-a':
    case 'reviewer-b':
    case 'reviewer-c':
    case 'flaky-start':
      return deliver(review(task));
    case 'fixer':
      return deliver(fix(task));
    case 'slow-fixer':
      await sleep(Number(task.slowMs ?? 5_000));
      return deliver(fix(task));
    case 'fixer-exit-1':
      // Commits the right fix, then exits non-zero: the re-gate must decide, not the exit code.
      deliver(fix(task));
      process.exit(1);
    case 'resolver':
      return deliver(resolve(task, false));
    case 'resolver-drops':
      return deliver(resolve(task, true));
    case 'attacker-fixer':
      runPayload();
      return deliver(fix(task));
    case 'attacker-resolver':
      runPayload();
      return deliver(resolve(task, false));
    case 'attacker-result':
      // The payload leaves whatever it likes as the result (a link, a fifo, a huge file).
      runPayload();
      return;
    case 'gateway-fixer':
    case 'gateway-repeater':
    case 'gateway-eager-boot':
      return deliver(await throughGateway(behaviour, task));
    case 'claims-success':
      // Says it is done without changing anything: completion must be decided by evidence.
      return deliver({ status: 'ok', summary: 'all fixed, tests pass' });
    case 'crash':
      process.stderr.write('scripted crash\n');
      process.exit(1);
    case 'hang':
      for (;;) await sleep(60_000);
    case 'oom': {
      const hoard = [];
      for (;;) hoard.push(Buffer.alloc(16 * 1024 * 1024, 1));
    }
    case 'slow':
      await sleep(Number(task.slowMs ?? 5_000));
      return deliver(review(task));
    case 'no-result':
      return;
    default:
      process.stderr.write(`unknown script behaviour: ${behaviour}\n`);
      process.exit(2);
  }
}

main().then(
  // Exit explicitly: an open gateway connection would otherwise keep the process (and the session) alive.
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error.stack || error}\n`);
    process.exit(1);
  },
);
