import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../core/node/config';
import { applyEnvFile, EnvFileError } from '../../core/node/env-file';

describe('.env (core/node/env-file.ts)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tarmac-env-file-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, '.env'),
    [
      '# a comment',
      'TARMAC_API_PORT=9123',
      'TARMAC_TEMPORAL_NAMESPACE=from-file',
      'export TARMAC_LOG_LEVEL=warn',
      'TARMAC_REPO_ALLOW="file:///srv/repos, https://git.example.com/acme"',
      'TARMAC_API_TOKENS=',
      'TARMAC_ENV_FILE=/elsewhere/.env',
      '',
    ].join('\n'),
  );

  it('fills what the environment lacks; the environment wins, even when set to empty; loadConfig reads the result', () => {
    const env: NodeJS.ProcessEnv = { TARMAC_TEMPORAL_NAMESPACE: 'from-env', TARMAC_API_TOKENS: '' };
    const load = applyEnvFile(env, dir);
    assert.equal(load.file, join(dir, '.env'));
    assert.deepEqual(load.applied.sort(), ['TARMAC_API_PORT', 'TARMAC_LOG_LEVEL', 'TARMAC_REPO_ALLOW']);
    assert.deepEqual(load.overridden.sort(), ['TARMAC_API_TOKENS', 'TARMAC_TEMPORAL_NAMESPACE']);
    const config = loadConfig(env);
    assert.equal(config.apiPort, 9123, 'a value from the file');
    assert.equal(config.namespace, 'from-env', 'the environment over the file');
    assert.equal(config.logLevel, 'warn', '`export NAME=` lines are read');
    assert.deepEqual(config.repoAllow, ['file:///srv/repos', 'https://git.example.com/acme'], 'quoted values');
    assert.equal(env.TARMAC_ENV_FILE, undefined, 'the file never chooses another file');
  });

  it('no .env in the directory: nothing read, nothing changed', () => {
    const empty = mkdtempSync(join(tmpdir(), 'tarmac-env-none-'));
    const env: NodeJS.ProcessEnv = { A: '1' };
    assert.deepEqual(applyEnvFile(env, empty), { applied: [], overridden: [] });
    assert.deepEqual(env, { A: '1' });
    rmSync(empty, { recursive: true });
  });

  it('TARMAC_ENV_FILE names another file (relative to the working directory), or none when empty', () => {
    writeFileSync(join(dir, 'staging.env'), 'TARMAC_API_PORT=9456\n');
    const other: NodeJS.ProcessEnv = { TARMAC_ENV_FILE: 'staging.env' };
    applyEnvFile(other, dir);
    assert.equal(other.TARMAC_API_PORT, '9456');
    const none: NodeJS.ProcessEnv = { TARMAC_ENV_FILE: '' };
    assert.deepEqual(applyEnvFile(none, dir), { applied: [], overridden: [] });
    assert.equal(none.TARMAC_API_PORT, undefined, "the directory's .env is not read either");
  });

  it('a file named by TARMAC_ENV_FILE that cannot be read is an error naming the variable and the path', () => {
    assert.throws(
      () => applyEnvFile({ TARMAC_ENV_FILE: 'missing.env' }, dir),
      (error: unknown) => error instanceof EnvFileError && error.message === `TARMAC_ENV_FILE: cannot read ${join(dir, 'missing.env')} (ENOENT)`,
    );
  });
});
