import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { inspect } from 'node:util';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../core/node/config';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.temporalAddress, '127.0.0.1:7233');
    assert.equal(config.apiPort, 8080);
    assert.equal(config.taskQueue, 'tarmac');
    assert.match(config.dataDir, /\.tarmac$/);
    assert.deepEqual(config.apiTokens, []);
  });

  it('names every bad variable at once', () => {
    assert.throws(
      () => loadConfig({ TARMAC_API_PORT: 'eighty', TARMAC_TEMPORAL_ADDRESS: 'nohost', TARMAC_LOG_LEVEL: 'loud', TARMAC_API_TOKENS: 'short' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        const text = error.problems.join('\n');
        for (const name of ['TARMAC_API_PORT', 'TARMAC_TEMPORAL_ADDRESS', 'TARMAC_LOG_LEVEL', 'TARMAC_API_TOKENS']) assert.match(text, new RegExp(name));
        return true;
      },
    );
  });

  it('reads the model upstreams: the providers by default, http(s) without credentials, query or fragment', () => {
    assert.deepEqual(loadConfig({}).modelUpstreams, { anthropic: 'https://api.anthropic.com', openai: 'https://api.openai.com' });
    assert.deepEqual(
      loadConfig({ TARMAC_MODEL_UPSTREAM_ANTHROPIC: 'http://127.0.0.1:8788/', TARMAC_MODEL_UPSTREAM_OPENAI: 'https://proxy.example.com/openai' })
        .modelUpstreams,
      {
        anthropic: 'http://127.0.0.1:8788',
        openai: 'https://proxy.example.com/openai',
      },
    );
    for (const bad of ['ftp://example.com', 'not a url', 'https://user:sk-secret-123@proxy.example.com', 'https://proxy.example.com/?key=1']) {
      assert.throws(
        () => loadConfig({ TARMAC_MODEL_UPSTREAM_ANTHROPIC: bad }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.match(error.problems.join('\n'), /TARMAC_MODEL_UPSTREAM_ANTHROPIC/);
          assert.doesNotMatch(error.message, /sk-secret-123/, 'credentials are not printed');
          return true;
        },
        bad,
      );
    }
  });

  it('reads TARMAC_REPO_ALLOW in canonical form, and refuses a bad entry without printing its credentials', () => {
    assert.deepEqual(
      [...loadConfig({ TARMAC_REPO_ALLOW: ' file:///srv/repos/ , HTTPS://Git.Example.com:443/acme/' }).repoAllow],
      ['file:///srv/repos', 'https://git.example.com/acme'],
    );
    assert.deepEqual([...loadConfig({}).repoAllow], [], 'unset: nothing is allowed');
    assert.throws(
      () => loadConfig({ TARMAC_REPO_ALLOW: '/srv/repos/../etc,https://user:hunter2-secret@git.example.com/acme' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.problems.length, 2);
        assert.match(error.problems[0]!, /^TARMAC_REPO_ALLOW: "\/srv\/repos\/\.\.\/etc" must not contain "\.\." segments/);
        assert.match(error.problems[1]!, /^TARMAC_REPO_ALLOW: .*credentials/);
        assert.doesNotMatch(error.message, /hunter2/);
        return true;
      },
    );
  });

  it('reads TARMAC_API_MAX_STREAMS_PER_TOKEN (default 8) and refuses a value that is not a positive whole number', () => {
    assert.equal(loadConfig({}).apiMaxStreamsPerToken, 8);
    assert.equal(loadConfig({ TARMAC_API_MAX_STREAMS_PER_TOKEN: '3' }).apiMaxStreamsPerToken, 3);
    for (const bad of ['0', '-1', '2.5', 'many']) {
      assert.throws(
        () => loadConfig({ TARMAC_API_MAX_STREAMS_PER_TOKEN: bad }),
        (error: unknown) => error instanceof ConfigError && /^TARMAC_API_MAX_STREAMS_PER_TOKEN: /.test(error.problems[0] ?? ''),
      );
    }
  });

  it('reads TARMAC_WORKER_QUEUES (default both) and refuses an unknown queue, naming the variable', () => {
    assert.deepEqual([...loadConfig({}).workerQueues], ['shared', 'host']);
    assert.deepEqual([...loadConfig({ TARMAC_WORKER_QUEUES: 'shared' }).workerQueues], ['shared']);
    assert.deepEqual([...loadConfig({ TARMAC_WORKER_QUEUES: ' host ' }).workerQueues], ['host']);
    assert.deepEqual([...loadConfig({ TARMAC_WORKER_QUEUES: 'host,shared' }).workerQueues], ['shared', 'host']);
    for (const bad of ['workflows', 'shared,', 'shared;host']) {
      assert.throws(
        () => loadConfig({ TARMAC_WORKER_QUEUES: bad }),
        (error: unknown) => error instanceof ConfigError && /^TARMAC_WORKER_QUEUES: ".*" must be shared,host/.test(error.problems[0] ?? ''),
        bad,
      );
    }
  });

  it('reads TARMAC_SPAWN_HELPER (default on) and refuses anything but on or off, naming the variable', () => {
    assert.equal(loadConfig({}).spawnHelper, true);
    assert.equal(loadConfig({ TARMAC_SPAWN_HELPER: 'off' }).spawnHelper, false);
    assert.equal(loadConfig({ TARMAC_SPAWN_HELPER: ' on ' }).spawnHelper, true);
    for (const bad of ['no', 'false', 'OFF']) {
      assert.throws(
        () => loadConfig({ TARMAC_SPAWN_HELPER: bad }),
        (error: unknown) => error instanceof ConfigError && error.problems[0] === `TARMAC_SPAWN_HELPER: "${bad}" must be on or off`,
        bad,
      );
    }
  });

  const poolSettings = [
    {
      variable: 'TARMAC_GATE_POOL',
      field: 'gatePool',
      fallback: 1,
      problem: 'must be a whole number of gate containers kept waiting (0-16; 0 turns the pool off)',
    },
    {
      variable: 'TARMAC_GATE_POOL_ENVIRONMENTS',
      field: 'gatePoolEnvironments',
      fallback: 2,
      problem: 'must be a whole number of environments the gate pool keeps a container for (0-16; 0 turns it off)',
    },
  ] as const;
  for (const { variable, field, fallback, problem } of poolSettings) {
    it(`reads ${variable} (default ${fallback}, 0 turns it off) and refuses anything but a whole number up to 16, naming the variable`, () => {
      assert.equal(loadConfig({})[field], fallback);
      assert.equal(loadConfig({ [variable]: '0' })[field], 0);
      assert.equal(loadConfig({ [variable]: ' 4 ' })[field], 4);
      assert.equal(loadConfig({ [variable]: '16' })[field], 16);
      for (const bad of ['-1', '17', '1.5', 'on', '2x']) {
        assert.throws(
          () => loadConfig({ [variable]: bad }),
          (error: unknown) => error instanceof ConfigError && error.problems[0] === `${variable}: "${bad}" ${problem}`,
          bad,
        );
      }
    });
  }

  it('reads TARMAC_EGRESS_ALLOW (default none: setups reach nothing) and refuses a bad entry, naming the variable and the entry', () => {
    assert.deepEqual([...loadConfig({}).egressAllow], []);
    assert.deepEqual(
      [...loadConfig({ TARMAC_EGRESS_ALLOW: ' Mirror.Example.com, *.example.org\nfiles.example.net ' }).egressAllow],
      ['mirror.example.com', '*.example.org', 'files.example.net'],
    );
    for (const [bad, why] of [
      ['mirror.example.com,10.0.0.1', '"10.0.0.1" is an IP address'],
      ['mirror.example.com:8443', '"mirror.example.com:8443" names a port'],
      ['https://mirror.example.com', '"https://mirror.example.com" is a URL'],
      ['mirror..example.com', '"mirror..example.com" has an empty label'],
    ] as const) {
      assert.throws(
        () => loadConfig({ TARMAC_EGRESS_ALLOW: bad }),
        (error: unknown) => error instanceof ConfigError && error.problems.length === 1 && error.problems[0]!.startsWith(`TARMAC_EGRESS_ALLOW: ${why}`),
        bad,
      );
    }
  });

  it('reads the environment settings (TARMAC_SETUP_ENV, TARMAC_EGRESS_CA, TARMAC_ENV_MAX_BYTES, TARMAC_ENV_CACHE_MAX), naming each bad one', () => {
    const defaults = loadConfig({}).environments;
    assert.deepEqual([defaults.setupEnv, defaults.envMaxBytes, defaults.envCacheMaxBytes], [{}, 4 * 1024 ** 3, 20 * 1024 ** 3]);
    const set = loadConfig({
      TARMAC_SETUP_ENV: 'npm_config_registry=https://mirror.example.com/npm/\nPIP_INDEX_URL=https://mirror.example.com/pypi/simple',
      TARMAC_ENV_MAX_BYTES: '512m',
      TARMAC_ENV_CACHE_MAX: '2G',
    }).environments;
    assert.deepEqual(set.setupEnv, { npm_config_registry: 'https://mirror.example.com/npm/', PIP_INDEX_URL: 'https://mirror.example.com/pypi/simple' });
    assert.deepEqual([set.envMaxBytes, set.envCacheMaxBytes], [512 * 1024 ** 2, 2 * 1024 ** 3]);
    const cases: Array<[Record<string, string>, string]> = [
      [{ TARMAC_SETUP_ENV: 'novalue' }, 'TARMAC_SETUP_ENV: "novalue" must be NAME=value'],
      [{ TARMAC_SETUP_ENV: 'HTTPS_PROXY=http://elsewhere' }, 'TARMAC_SETUP_ENV: HTTPS_PROXY is set by Tarmac itself'],
      [{ TARMAC_SETUP_ENV: 'TARMAC_X=1' }, 'TARMAC_SETUP_ENV: TARMAC_X is set by Tarmac itself'],
      [{ TARMAC_EGRESS_CA: '/nonexistent/ca.pem' }, 'TARMAC_EGRESS_CA: /nonexistent/ca.pem does not exist'],
      [{ TARMAC_ENV_MAX_BYTES: 'lots' }, 'TARMAC_ENV_MAX_BYTES: "lots" must be a size'],
      [{ TARMAC_ENV_CACHE_MAX: '10k' }, 'TARMAC_ENV_CACHE_MAX: "10k" must be a size of at least 1m'],
    ];
    for (const [env, message] of cases) {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && error.problems.length === 1 && error.problems[0]!.startsWith(message),
        message,
      );
    }
    // A setup variable may carry a registry's token: its value is never serialised.
    const secret = loadConfig({ TARMAC_SETUP_ENV: 'NPM_TOKEN=registry-token-value-123' });
    assert.equal(secret.environments.setupEnv.NPM_TOKEN, 'registry-token-value-123');
    assert.doesNotMatch(JSON.stringify(secret), /registry-token-value/);
    assert.doesNotMatch(inspect(secret, { depth: 5 }), /registry-token-value/);
  });

  it('never serialises the API tokens', () => {
    const secret = 'super-secret-token-value-123';
    const config = loadConfig({ TARMAC_API_TOKENS: `${secret},another-secret-token-456` });
    assert.deepEqual([...config.apiTokens], [secret, 'another-secret-token-456'], 'the tokens are usable');
    assert.doesNotMatch(JSON.stringify(config), /secret-token/);
    assert.doesNotMatch(inspect(config, { depth: 5 }), /secret-token/);
  });
});

describe('.env.example', () => {
  it('documents every variable loadConfig reads', () => {
    const source = readFileSync(resolve(__dirname, '../../core/node/config.ts'), 'utf8');
    const example = readFileSync(resolve(__dirname, '../../.env.example'), 'utf8');
    const read = new Set(source.match(/TARMAC_[A-Z_]+/g));
    assert.ok(read.size >= 10, 'found the variables in core/node/config.ts');
    for (const name of read) assert.match(example, new RegExp(`^#? ?${name}=`, 'm'), `${name} is in .env.example`);
  });
});
