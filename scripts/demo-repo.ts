/**
 * `npm run demo [dir]`: creates a demo repository with a bare `file://` origin:
 * `main` declares a gate (`make test`), `feature/greeting` adds a tested change.
 */
import { join, resolve } from 'node:path';
import { createFixtureRepo, gateFile } from '../infra/fixture-repo';

const dir = resolve(process.argv[2] ?? join(process.cwd(), '.tarmac', 'demo'));
const repo = createFixtureRepo({
  dir,
  name: 'demo',
  base: {
    'Makefile': 'test:\n\tnode test.js\n',
    'greeting.js': "module.exports = () => 'hello';\n",
    'test.js': "const assert = require('node:assert');\nassert.strictEqual(require('./greeting.js')(), 'hello');\nconsole.log('ok');\n",
    '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'], timeout: '2m' }]),
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
