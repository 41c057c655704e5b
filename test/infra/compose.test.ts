import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { searchAttributeDeclarations } from '../../core/search-attributes';

const root = resolve(__dirname, '../..');

/** The compose tool of this machine: Debian's docker-compose, else the docker CLI plugin. */
function compose(args: string[], env: NodeJS.ProcessEnv) {
  const standalone = spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0;
  const [command, prefix] = standalone ? ['docker-compose', []] : ['docker', ['compose']];
  return spawnSync(command, [...prefix, '-f', 'docker-compose.yml', ...args], { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8' });
}

describe('docker-compose.yml (validated by the compose tool)', () => {
  const env = { TARMAC_API_TOKENS: 'compose-test-token-0123456789', TARMAC_REPO_ALLOW: 'https://git.example.com/acme' };

  it('is a valid compose file with the distributed services', () => {
    const checked = compose(['config', '-q'], env);
    assert.equal(checked.status, 0, checked.stderr);
    const services = compose(['config', '--services'], env).stdout.trim().split('\n').sort();
    assert.deepEqual(services, ['api', 'postgresql', 'temporal', 'temporal-setup', 'temporal-ui', 'worker']);
  });

  it('gives workers the Docker socket and the data dir at the same path inside and out', () => {
    const rendered = compose(['config'], { ...env, TARMAC_DATA_DIR: '/srv/tarmac-data' }).stdout;
    const worker = rendered.slice(rendered.indexOf('\n  worker:'));
    assert.match(worker, /\/var\/run\/docker\.sock:\/var\/run\/docker\.sock/);
    assert.match(worker, /\/srv\/tarmac-data:\/srv\/tarmac-data/);
    assert.match(worker, /TARMAC_WORKER_METRICS_PORT: ["']?9464/, 'each worker serves its metrics');
    const api = rendered.slice(rendered.indexOf('\n  api:'), rendered.indexOf('\n  postgresql:'));
    assert.match(api, /\/srv\/tarmac-data:\/srv\/tarmac-data:ro/, 'the API reads run logs for the live events, read-only');
  });

  it('refuses to render without API tokens, naming the variable', () => {
    const refused = compose(['config', '-q'], { ...env, TARMAC_API_TOKENS: '' });
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /TARMAC_API_TOKENS/);
  });

  it('refuses to render without a repository allow-list, naming the variable', () => {
    const refused = compose(['config', '-q'], { ...env, TARMAC_REPO_ALLOW: '' });
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr, /TARMAC_REPO_ALLOW/);
  });

  it('registers every search attribute the workflows declare, with the same type', () => {
    const file = readFileSync(resolve(root, 'docker-compose.yml'), 'utf8');
    for (const declaration of searchAttributeDeclarations) assert.ok(file.includes(declaration), `${declaration} is registered`);
  });
});
