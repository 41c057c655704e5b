import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, it } from 'node:test';
import { loadCliConfig } from '../../cli/config';
import { CliError } from '../../cli/errors';
import { isClientCommand, runCli, runHelp, wantsHelp } from '../../cli/main';
import { commandUsage, isDocumentedCommand, usage } from '../../cli/usage';

const token = 'cli-token-0123456789abcdef';

describe('loadCliConfig: where the API is, and the token', () => {
  const home = mkdtempSync(join(tmpdir(), 'tarmac-cli-config-'));
  writeFileSync(join(home, 'api-token'), `${token}-from-file\n`);

  const cases: { name: string; env: NodeJS.ProcessEnv; apiUrl: string; apiToken: string }[] = [
    {
      name: "defaults: the server's listen address, the token tarmac dev wrote",
      env: { TARMAC_DATA_DIR: home },
      apiUrl: 'http://127.0.0.1:8080',
      apiToken: `${token}-from-file`,
    },
    {
      name: 'TARMAC_API_URL wins; a trailing slash is dropped',
      env: { TARMAC_API_URL: 'https://tarmac.example:9443/', TARMAC_API_TOKEN: token },
      apiUrl: 'https://tarmac.example:9443',
      apiToken: token,
    },
    {
      name: "a path prefix is kept (a reverse proxy's mount point)",
      env: { TARMAC_API_URL: 'http://proxy/tarmac/', TARMAC_API_TOKEN: token },
      apiUrl: 'http://proxy/tarmac',
      apiToken: token,
    },
    {
      name: 'host and port from the server settings',
      env: { TARMAC_API_HOST: '10.0.0.5', TARMAC_API_PORT: '9090', TARMAC_API_TOKEN: token },
      apiUrl: 'http://10.0.0.5:9090',
      apiToken: token,
    },
    {
      name: 'a server listening everywhere is dialled on loopback',
      env: { TARMAC_API_HOST: '0.0.0.0', TARMAC_API_TOKEN: token },
      apiUrl: 'http://127.0.0.1:8080',
      apiToken: token,
    },
    { name: 'an IPv6 host gets brackets', env: { TARMAC_API_HOST: '::', TARMAC_API_TOKEN: token }, apiUrl: 'http://[::1]:8080', apiToken: token },
    {
      name: "the first of the server's TARMAC_API_TOKENS",
      env: { TARMAC_API_TOKENS: ` ${token}-a , ${token}-b`, TARMAC_DATA_DIR: home },
      apiUrl: 'http://127.0.0.1:8080',
      apiToken: `${token}-a`,
    },
    {
      name: 'TARMAC_API_TOKEN before TARMAC_API_TOKENS and the file',
      env: { TARMAC_API_TOKEN: token, TARMAC_API_TOKENS: `${token}-a`, TARMAC_DATA_DIR: home },
      apiUrl: 'http://127.0.0.1:8080',
      apiToken: token,
    },
  ];
  for (const { name, env, apiUrl, apiToken } of cases) {
    it(name, () => {
      const config = loadCliConfig(env, '/nowhere');
      assert.equal(config.apiUrl, apiUrl);
      assert.equal(config.apiToken, apiToken);
    });
  }

  it('the token file is found relative to the working directory, like the data dir (default ./.tarmac)', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'tarmac-cli-cwd-'));
    mkdirSync(join(cwd, '.tarmac'));
    writeFileSync(join(cwd, '.tarmac', 'api-token'), `${token}\n`);
    assert.equal(loadCliConfig({}, cwd).apiToken, token);
    assert.equal(loadCliConfig({}, cwd).tokenSource, join(cwd, '.tarmac', 'api-token'));
  });

  const bad: { name: string; env: NodeJS.ProcessEnv; named: RegExp[] }[] = [
    {
      name: 'no token anywhere names the variable and the file',
      env: { TARMAC_DATA_DIR: '/nonexistent-tarmac' },
      named: [/TARMAC_API_TOKEN/, /\/nonexistent-tarmac\/api-token/],
    },
    { name: 'a URL that is not one', env: { TARMAC_API_URL: 'localhost:8080', TARMAC_API_TOKEN: token }, named: [/TARMAC_API_URL: "localhost:8080"/] },
    { name: 'a URL with another scheme', env: { TARMAC_API_URL: 'ftp://x', TARMAC_API_TOKEN: token }, named: [/TARMAC_API_URL: "ftp:\/\/x" must be an http/] },
    { name: 'credentials in the URL', env: { TARMAC_API_URL: 'http://u:p@x', TARMAC_API_TOKEN: token }, named: [/TARMAC_API_URL: must not carry credentials/] },
    { name: 'a bad port', env: { TARMAC_API_PORT: 'eighty', TARMAC_API_TOKEN: token }, named: [/TARMAC_API_PORT: "eighty"/] },
    { name: 'a token the API would never accept', env: { TARMAC_API_TOKEN: 'short' }, named: [/TARMAC_API_TOKEN: must be at least 16/] },
    { name: 'every bad variable at once', env: { TARMAC_API_URL: 'nope', TARMAC_API_TOKEN: 'short' }, named: [/TARMAC_API_URL/, /TARMAC_API_TOKEN/] },
  ];
  for (const { name, env, named } of bad) {
    it(`fails: ${name}`, () => {
      assert.throws(
        () => loadCliConfig(env, '/nowhere'),
        (error: unknown) => {
          assert.ok(error instanceof CliError);
          assert.equal(error.exitCode, 2);
          for (const pattern of named) assert.match(error.message, pattern);
          return true;
        },
      );
    });
  }

  it('never shows the token in JSON or inspect', () => {
    const config = loadCliConfig({ TARMAC_API_TOKEN: token });
    assert.doesNotMatch(JSON.stringify(config), new RegExp(token));
    assert.doesNotMatch(inspect(config), new RegExp(token));
  });
});

describe('command lines: usage errors exit 2 before any request, naming what is wrong', () => {
  const run = async (command: Parameters<typeof runCli>[0], args: string[]) => {
    let stdout = '';
    let stderr = '';
    // No token and no API: a usage error must be found before either is needed.
    const code = await runCli(command, args, {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: { TARMAC_DATA_DIR: '/nonexistent-tarmac' },
      cwd: '/',
    });
    return { code, stdout, stderr };
  };
  const cases: { args: [Parameters<typeof runCli>[0], string[]]; message: RegExp }[] = [
    { args: ['land', []], message: /land: missing <repo> <branch>/ },
    { args: ['land', ['repo']], message: /land: missing <branch>/ },
    { args: ['land', ['repo', 'feature/x']], message: /land: --onto <target> is required/ },
    { args: ['land', ['repo', 'feature/x', '--onto']], message: /land: Option '--onto <value>' argument missing/ },
    { args: ['land', ['repo', 'feature/x', '--onto', 'main', '--force']], message: /land: Unknown option '--force'/ },
    { args: ['land', ['repo', 'feature/x', '--onto', 'main', '--json', '--watch']], message: /--json and --watch do not go together/ },
    { args: ['status', []], message: /status: missing <id>/ },
    { args: ['watch', ['a', 'b']], message: /watch: unexpected argument "b"/ },
    { args: ['answer', ['land.x']], message: /answer: missing <text>/ },
    { args: ['cancel', []], message: /cancel: missing <id>/ },
    { args: ['fix', ['repo', 'main']], message: /fix: missing <request>/ },
    { args: ['fix', ['repo', 'main', 'make test pass', '--max-repairs', 'many']], message: /--max-repairs must be a whole number/ },
    { args: ['fix', ['repo', 'main', 'make test pass', '--logs']], message: /fix: --logs and --plain go with --wait/ },
    { args: ['list', ['extra']], message: /list: unexpected argument "extra"/ },
    {
      args: ['list', ['--status', 'sleeping']],
      message: /list: --status must be one of running, completed, failed, canceled, terminated, timed-out, not "sleeping"/,
    },
    { args: ['list', ['--limit', '0']], message: /list: --limit must be a whole number 1-200/ },
    { args: ['logs', []], message: /logs: missing <id>/ },
    { args: ['budget', ['land.x']], message: /budget: missing <extend\|stop>/ },
    { args: ['budget', ['land.x', 'grow']], message: /budget: the action is extend or stop, not "grow"/ },
    { args: ['budget', ['land.x', 'extend']], message: /budget: extend needs at least one of --tokens, --cost-usd, --sessions, --wall/ },
    { args: ['budget', ['land.x', 'extend', '--tokens', '1.5']], message: /budget: --tokens must be a whole number above 0, not "1\.5"/ },
    { args: ['budget', ['land.x', 'extend', '--cost-usd', '0.001']], message: /budget: --cost-usd must be US dollars, at least 0\.01/ },
    { args: ['budget', ['land.x', 'extend', '--wall', '10 minutes']], message: /budget: --wall must be a duration above 0/ },
    { args: ['budget', ['land.x', 'stop', '--tokens', '5']], message: /budget: stop takes no amounts \(--tokens\)/ },
    { args: ['review', ['repo', 'feature/x', '--panel', 'default']], message: /review: --base <branch> is required/ },
    { args: ['review', ['repo', 'feature/x', '--base', 'main']], message: /review: --panel <name> is required/ },
    { args: ['review', ['repo', 'feature/x', '--base', 'main', '--panel', 'p', '--quorum', 'all']], message: /review: --quorum must be a whole number 1-12/ },
    { args: ['schedule', []], message: /schedule: missing <list\|create\|show\|trigger\|delete>/ },
    { args: ['schedule', ['pause', 'x']], message: /schedule: unknown subcommand "pause"/ },
    { args: ['schedule', ['create', 'repo']], message: /schedule create: missing <target>/ },
    { args: ['schedule', ['trigger']], message: /schedule trigger: missing <id>/ },
    { args: ['retry', ['land.x', '--plain']], message: /retry: --logs and --plain go with --watch/ },
    { args: ['quarantines', ['extra']], message: /quarantines: unexpected argument "extra"/ },
    { args: ['quarantines', ['lift']], message: /quarantines lift: missing <suite>/ },
    { args: ['quarantines', ['lift', 'test', '--target', 'main']], message: /quarantines lift: --repo is required/ },
    { args: ['quarantines', ['lift', 'test', '--repo', '/srv/repo.git']], message: /quarantines lift: --target is required/ },
    { args: ['environments', ['extra']], message: /environments: unexpected argument "extra"/ },
    { args: ['environments', ['--target', 'main']], message: /environments: Unknown option '--target'/ },
  ];
  for (const { args, message } of cases) {
    it(`tarmac ${args[0]} ${args[1].join(' ')}`, async () => {
      const { code, stdout, stderr } = await run(...args);
      assert.equal(code, 2);
      assert.equal(stdout, '');
      assert.match(stderr, message);
      // The command's own usage follows the message, not the whole binary's.
      assert.match(stderr, new RegExp(`\\n\\nusage: tarmac ${args[0]} `), 'the usage of that command');
      assert.doesNotMatch(stderr, /^ {2}dev\b/m, 'not the overview');
    });
  }

  it('a missing token is a configuration error naming the variable (exit 2), once the command line is right', async () => {
    const { code, stderr } = await run('status', ['land.x']);
    assert.equal(code, 2);
    assert.match(stderr, /TARMAC_API_TOKEN: not set, and no token file at \/nonexistent-tarmac\/api-token/);
  });
});

describe('help: every command has its own, and the overview lists them all', () => {
  const clientCommands = [
    'land',
    'list',
    'status',
    'watch',
    'logs',
    'answer',
    'cancel',
    'retry',
    'budget',
    'review',
    'fix',
    'schedule',
    'quarantines',
    'environments',
  ] as const;
  for (const command of clientCommands) {
    it(`tarmac ${command} --help: its usage on stdout, exit 0, no request (there is no token)`, async () => {
      assert.ok(isClientCommand(command));
      let stdout = '';
      let stderr = '';
      const io = { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) }, env: {}, cwd: '/' };
      // Also after other arguments and options, which are not looked at.
      for (const args of [['--help'], ['-h'], ['x', '--bogus', '--help']]) {
        stdout = '';
        assert.equal(await runCli(command, args, io), 0, stderr);
        assert.equal(stdout, commandUsage(command));
        assert.match(stdout, new RegExp(`^usage: tarmac ${command} `));
        assert.match(stdout, /\nexit codes: 0 /);
      }
      assert.equal(stderr, '');
      assert.match(usage, new RegExp(`^ {2}${command}\\b`, 'm'), `the overview lists ${command}`);
    });
  }
  it('dev, worker and api are documented; help <command> prints it; an unknown one exits 2 with the overview', () => {
    for (const command of ['dev', 'worker', 'api']) {
      assert.ok(isDocumentedCommand(command));
      assert.match(usage, new RegExp(`^ {2}${command}\\b`, 'm'));
    }
    let stdout = '';
    let stderr = '';
    const io = { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) } };
    assert.equal(runHelp(['budget'], io), 0);
    assert.equal(stdout, commandUsage('budget'));
    stdout = '';
    assert.equal(runHelp([], io), 0);
    assert.equal(stdout, usage);
    assert.equal(runHelp(['launch'], io), 2);
    assert.match(stderr, /^tarmac: help: unknown command "launch"\n\nusage: tarmac <command>/);
  });
  it('--help after -- is an argument, not a request for help', () => {
    assert.equal(wantsHelp(['land.x', '--', '--help']), false);
    assert.equal(wantsHelp(['land.x', '-h']), true);
  });
});
