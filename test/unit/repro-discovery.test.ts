import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Intent, RepoFacts } from '../../core/fix-types';
import { discoverRepro, treeFileOf, type ReproChoice } from '../../policies/repro-discovery';

/** Facts of a repository: its files, make's targets (by file), package.json's scripts. */
function facts({
  files = [],
  make,
  scripts,
  main,
}: {
  files?: string[];
  make?: Record<string, string[]>;
  scripts?: Record<string, string>;
  main?: string;
}): RepoFacts {
  const makefiles = make ? Object.keys(make) : [];
  return {
    headSha: 'a'.repeat(40),
    files: [...files, ...makefiles, ...(scripts ? ['package.json'] : [])],
    filesTruncated: false,
    makefile: makefiles[0] ?? null,
    make: make
      ? { source: 'make', makefiles, targets: Object.entries(make).flatMap(([file, names]) => names.map((name) => ({ name, recipe: { file, line: 2 } }))) }
      : null,
    packageJson: scripts ? { scripts, ...(main ? { main } : {}) } : null,
    read: [...makefiles, ...(scripts ? ['package.json'] : [])],
    notes: [],
  };
}

const included = { Makefile: ['build'], 'mk/run.mk': ['start_all', 'stop'] };
const app = { files: ['src/index.js', 'src/lib/formatter.js'], scripts: { start: 'node src/index.js', lint: 'eslint .' } };

const table: {
  name: string;
  request: string;
  intent: Intent;
  facts: RepoFacts;
  reproCommand?: string;
  expected: { command: string | null; source: ReproChoice['source']; reason: RegExp };
}[] = [
  // 1. explicit
  {
    name: 'an explicit reproCommand wins over everything',
    request: 'make start-all fails',
    intent: 'boot-fix',
    reproCommand: 'sh check.sh',
    facts: facts({ make: included }),
    expected: { command: 'sh check.sh', source: 'explicit', reason: /reproCommand/ },
  },
  // 2. the request's words: pasted errors
  {
    name: "make's error names a target the repository lacks: the user's command is the repro",
    request: "make start-all fails: No rule to make target 'start-all'",
    intent: 'boot-fix',
    facts: facts({ make: included }),
    expected: { command: 'make start-all', source: 'request', reason: /pastes make's error "No rule to make target 'start-all'"/ },
  },
  {
    name: "make's error with `needed by` a defined target: that target reproduces it",
    request: "make: *** No rule to make target 'biuld', needed by 'all'.  Stop.",
    intent: 'build-fix',
    facts: facts({ make: { Makefile: ['all', 'build'] } }),
    expected: { command: 'make all', source: 'request', reason: /`make all` \(defined in Makefile, line 2\) reproduces it/ },
  },
  {
    name: "npm's missing script",
    request: 'npm run serve_app says npm error Missing script: "serve_app"',
    intent: 'boot-fix',
    facts: facts({ scripts: { 'serve-app': 'node server.js' } }),
    expected: { command: 'npm run serve_app', source: 'request', reason: /Missing script: serve_app/ },
  },
  {
    name: "make's error, but the repository has no makefile → not taken",
    request: "No rule to make target 'up'",
    intent: 'boot-fix',
    facts: facts({}),
    expected: { command: null, source: null, reason: /no grounded repro/ },
  },
  // 2. the request's words: written commands
  {
    name: 'a written make target the repository defines (in an included makefile)',
    request: 'please fix make stop, it hangs',
    intent: 'other-fix',
    facts: facts({ make: included }),
    expected: { command: 'make stop', source: 'request', reason: /mk\/run\.mk, line 2 defines as a make target/ },
  },
  {
    name: 'a written make target the user plainly ran ("with make up")',
    request: 'the app does not start with make up',
    intent: 'boot-fix',
    facts: facts({ make: { Makefile: ['test'] } }),
    expected: { command: 'make up', source: 'request', reason: /as the command it ran/ },
  },
  {
    name: 'a written command in backticks',
    request: '`make serve` is broken since yesterday',
    intent: 'boot-fix',
    facts: facts({ make: { Makefile: ['test'] } }),
    expected: { command: 'make serve', source: 'request', reason: /as the command it ran/ },
  },
  {
    name: '"make sure …" is no command: the repository decides',
    request: 'please make sure the tests pass',
    intent: 'test-fix',
    facts: facts({ make: { Makefile: ['test'] } }),
    expected: { command: 'make test', source: 'repository', reason: /not taken from the request: `make sure`/ },
  },
  {
    name: 'npm start written, package.json defines it',
    request: 'npm start crashes',
    intent: 'boot-fix',
    facts: facts(app),
    expected: { command: 'npm start', source: 'request', reason: /package\.json defines \(scripts\.start\)/ },
  },
  {
    name: 'npm run written, the script exists',
    request: 'npm run lint reports errors',
    intent: 'other-fix',
    facts: facts(app),
    expected: { command: 'npm run lint', source: 'request', reason: /scripts\.lint/ },
  },
  {
    name: 'npm test written but there is no package.json → not taken; nothing grounded',
    request: 'npm test fails',
    intent: 'test-fix',
    facts: facts({ files: ['README.md'] }),
    expected: { command: null, source: null, reason: /`npm test` \(the repository has no readable package\.json\)/ },
  },
  {
    name: 'node <file> written, the file exists',
    request: 'node src/index.js dies at once',
    intent: 'boot-fix',
    facts: facts(app),
    expected: { command: 'node src/index.js', source: 'request', reason: /src\/index\.js is in the repository/ },
  },
  // 2. the request's words: a trace's entry point
  {
    name: "a Cannot find module trace: the require stack's entry point",
    request: "the app crashes:\nError: Cannot find module './lib/formater'\nRequire stack:\n- /home/me/app/src/lib/use.js\n- /home/me/app/src/index.js\n",
    intent: 'boot-fix',
    facts: facts({ files: ['src/index.js', 'src/lib/use.js'] }),
    expected: { command: 'node src/index.js', source: 'request', reason: /entry point is src\/index\.js/ },
  },
  {
    name: 'ERR_MODULE_NOT_FOUND: the importing file',
    request: "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/srv/app/src/lib/x.js' imported from /srv/app/src/main.mjs",
    intent: 'other-fix',
    facts: facts({ files: ['src/main.mjs'] }),
    expected: { command: 'node src/main.mjs', source: 'request', reason: /importing from src\/main\.mjs/ },
  },
  {
    name: 'a pasted error outranks a command written before it',
    request: "I ran make dev and got: No rule to make target 'assets', needed by 'dev'",
    intent: 'boot-fix',
    facts: facts({ make: { Makefile: ['dev'] } }),
    expected: { command: 'make dev', source: 'request', reason: /pastes make's error/ },
  },
  // 3. the repository
  {
    name: "a Node project, no makefile: package.json's start for a boot fix",
    request: 'the app will not start',
    intent: 'boot-fix',
    facts: facts(app),
    expected: { command: 'npm start', source: 'repository', reason: /package\.json defines scripts\.start \(`node src\/index\.js`\)/ },
  },
  {
    name: 'a make target a boot fix looks for (defined in an included makefile)',
    request: 'nothing comes up',
    intent: 'boot-fix',
    facts: facts({ make: { Makefile: ['build'], 'mk/run.mk': ['up'] } }),
    expected: { command: 'make up', source: 'repository', reason: /defines target "up" \(recipe in mk\/run\.mk, line 2\)/ },
  },
  {
    name: 'the name the request speaks of is preferred among those defined',
    request: 'the dev server will not come up',
    intent: 'boot-fix',
    facts: facts({ scripts: { start: 'node server.js', dev: 'node dev.js' } }),
    expected: { command: 'npm run dev', source: 'repository', reason: /speaks of "dev"/ },
  },
  {
    name: 'a build fix: make build',
    request: 'the build is broken',
    intent: 'build-fix',
    facts: facts({ make: { Makefile: ['build', 'test'] }, scripts: { build: 'tsc' } }),
    expected: { command: 'make build', source: 'repository', reason: /target "build"/ },
  },
  {
    name: 'a test fix: npm test',
    request: 'the tests fail',
    intent: 'test-fix',
    facts: facts({ scripts: { test: 'node --test' } }),
    expected: { command: 'npm test', source: 'repository', reason: /scripts\.test/ },
  },
  {
    name: "a boot fix, no start script: npm's server.js default",
    request: 'it will not start',
    intent: 'boot-fix',
    facts: facts({ files: ['server.js'], scripts: { lint: 'eslint .' } }),
    expected: { command: 'npm start', source: 'repository', reason: /runs `node server\.js`/ },
  },
  {
    name: "a boot fix, no start script: package.json's main",
    request: 'it will not start',
    intent: 'boot-fix',
    facts: facts({ files: ['lib/app.js'], scripts: {}, main: './lib/app.js' }),
    expected: { command: 'node lib/app.js', source: 'repository', reason: /entry point is lib\/app\.js/ },
  },
  // nothing grounded
  {
    name: 'nothing grounded: no command, no error, nothing the repository defines for the intent',
    request: 'the app will not start',
    intent: 'boot-fix',
    facts: facts({ files: ['README.md', 'src/lib.js'], make: { Makefile: ['lint'] } }),
    expected: {
      command: null,
      source: null,
      reason: /no grounded repro: .*for a boot-fix \(looked for start, dev, serve, up, run, start-all\); read Makefile — targets: lint; no package\.json/,
    },
  },
  {
    name: 'nothing grounded, and a written command the user did not run is named as not taken',
    request: 'make sure the server starts',
    intent: 'boot-fix',
    facts: facts({ make: { Makefile: ['lint'] } }),
    expected: {
      command: null,
      source: null,
      reason: /not taken from the request: `make sure` \(no makefile defines "sure", and the request does not say it ran it\)/,
    },
  },
];

describe('discoverRepro', () => {
  for (const { name, request, intent, facts: given, reproCommand, expected } of table) {
    it(name, () => {
      const choice = discoverRepro({ request, intent, facts: given, ...(reproCommand ? { reproCommand } : {}) });
      assert.equal(choice.command, expected.command, choice.reason);
      assert.equal(choice.source, expected.source);
      assert.match(choice.reason, expected.reason);
    });
  }
  it('a command taken from the text is never more than a name: no shell syntax reaches the repro', () => {
    const choice = discoverRepro({ request: "No rule to make target 'x;rm'", intent: 'boot-fix', facts: facts({ make: { Makefile: ['x'] } }) });
    assert.notEqual(choice.command, 'make x;rm');
    assert.doesNotMatch(choice.command ?? '', /[;$`|&]/);
  });
  it('treeFileOf maps a trace path to the longest tree path it ends with', () => {
    assert.equal(treeFileOf('/workspace/src/index.js', ['index.js', 'src/index.js']), 'src/index.js');
    assert.equal(treeFileOf('file:///srv/app/main.mjs:3:7', ['main.mjs']), 'main.mjs');
    assert.equal(treeFileOf('/elsewhere/other.js', ['src/index.js']), undefined);
  });
});
