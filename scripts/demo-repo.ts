/**
 * `npm run demo [-- conflict] [dir]`: creates a demo repository with a bare `file://` origin and
 * prints its URL.
 * - default: `main` declares a gate (`make test`), `feature/greeting` adds a tested change.
 * - `conflict`: `main` and `feature/conflict` change the same line, so landing the branch needs a
 *   resolver agent; next to the repository it writes `claude-resolver.json`, a script for the scripted
 *   model endpoint with which the real Claude Code CLI resolves the conflict through the tool
 *   gateway — no key needed (README, "Real agents").
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createFixtureRepo, gateFile } from '../infra/fixture-repo';
import type { Script } from '../infra/scripted-model/script';

const args = process.argv.slice(2);
const conflict = args[0] === 'conflict';
const dir = resolve((conflict ? args[1] : args[0]) ?? join(process.cwd(), '.tarmac', conflict ? 'demo-conflict' : 'demo'));
const gate = gateFile([{ id: 'test', run: ['make', 'test'], timeout: '2m' }]);

if (!conflict) {
  const repo = createFixtureRepo({
    dir,
    name: 'demo',
    base: {
      Makefile: 'test:\n\tnode test.js\n',
      'greeting.js': "module.exports = () => 'hello';\n",
      'test.js': "const assert = require('node:assert');\nassert.strictEqual(require('./greeting.js')(), 'hello');\nconsole.log('ok');\n",
      '.config/tarmac/land-gate.json': gate,
    },
    branches: [
      {
        name: 'feature/greeting',
        commits: [
          {
            message: 'greeting: say hello to someone',
            files: {
              'greeting.js': "module.exports = (name) => (name ? `hello, ${name}` : 'hello');\n",
              'test.js':
                "const assert = require('node:assert');\nconst greet = require('./greeting.js');\nassert.strictEqual(greet(), 'hello');\nassert.strictEqual(greet('ada'), 'hello, ada');\nconsole.log('ok');\n",
            },
          },
        ],
      },
    ],
  });
  process.stdout.write(`${repo.url}\n`);
} else {
  const test =
    "const assert = require('node:assert');\nconst greet = require('./greeting.js');\nassert.match(greet(), /^hello/);\nassert.match(greet('ada'), /^hello, ada/);\nconsole.log('ok');\n";
  const repo = createFixtureRepo({
    dir,
    name: 'demo',
    base: {
      Makefile: 'test:\n\tnode test.js\n',
      'greeting.js': "module.exports = () => 'hello';\n",
      'test.js': "require('./greeting.js')();\n",
      '.config/tarmac/land-gate.json': gate,
    },
    branches: [
      {
        name: 'feature/conflict',
        commits: [
          {
            message: 'greeting: say hello to someone',
            files: { 'greeting.js': "module.exports = (name) => (name ? `hello, ${name}` : 'hello');\n", 'test.js': test },
          },
        ],
      },
    ],
  });
  // Meanwhile main changed the same line.
  repo.advanceTarget('greeting: more cheerful', { 'greeting.js': "module.exports = () => 'hello!';\n" });
  // The resolver, scripted: read the conflict, write both intents, continue the rebase, answer.
  const resolved = "module.exports = (name) => (name ? `hello, ${name}!` : 'hello!');\n";
  const script: Script = {
    version: 1,
    conversations: [
      {
        name: 'resolver',
        match: 'greeting.js',
        turns: [
          {
            text: 'Reading the conflict in greeting.js.',
            toolCalls: [{ name: 'mcp__tarmac__read_file', input: { path: 'greeting.js' } }],
            usage: { inputTokens: 2400, outputTokens: 60 },
          },
          {
            text: 'Keeping the name (branch) and the exclamation (main).',
            toolCalls: [{ name: 'mcp__tarmac__write_file', input: { path: 'greeting.js', content: resolved } }],
            usage: { inputTokens: 2700, outputTokens: 90 },
          },
          {
            toolCalls: [{ name: 'mcp__tarmac__run_command', input: { command: 'git add greeting.js && GIT_EDITOR=true git rebase --continue' } }],
            usage: { inputTokens: 2900, outputTokens: 50 },
          },
          { text: 'Resolved greeting.js keeping both intents; the rebase is complete.', usage: { inputTokens: 3100, outputTokens: 30 } },
        ],
      },
    ],
  };
  const scriptFile = join(dir, 'claude-resolver.json');
  writeFileSync(scriptFile, `${JSON.stringify(script, null, 2)}\n`);
  process.stderr.write(`feature/conflict conflicts with main in greeting.js; the resolver's script: ${scriptFile}\n`);
  process.stdout.write(`${repo.url}\n`);
}
