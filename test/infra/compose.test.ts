import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { searchAttributeDeclarations } from '../../core/search-attributes';

const root = resolve(__dirname, '../..');
/** A project directory whose `.env` is .env.example with the secrets filled in, as the compose file's header says to begin. */
const project = mkdtempSync(join(tmpdir(), 'tarmac-compose-'));
const secrets = { TEMPORAL_DB_PASSWORD: 'compose-test-db-password', ANTHROPIC_API_KEY: 'sk-ant-compose-test', OPENAI_API_KEY: 'sk-openai-compose-test' };
let dotenv = readFileSync(join(root, '.env.example'), 'utf8');
for (const [name, value] of Object.entries(secrets)) {
  const line = new RegExp(`^#? ?${name}=.*$`, 'm');
  dotenv = line.test(dotenv) ? dotenv.replace(line, `${name}=${value}`) : `${dotenv}${name}=${value}\n`;
}
writeFileSync(join(project, '.env'), dotenv);

/** The compose tool of this machine: Debian's docker-compose, else the docker CLI plugin. */
function compose(args: string[], env: NodeJS.ProcessEnv) {
  const standalone = spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0;
  const [command, prefix] = standalone ? ['docker-compose', []] : ['docker', ['compose']];
  return spawnSync(command, [...prefix, '-f', join(root, 'docker-compose.yml'), '--project-directory', project, ...args], {
    cwd: project,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
}

/** One service's block of the rendered file (`compose config`): from `  <name>:` to the next service or the end. */
function service(rendered: string, name: string): string {
  const start = rendered.indexOf(`\n  ${name}:\n`);
  assert.ok(start >= 0, `service ${name} is rendered`);
  const rest = rendered.slice(start + 1);
  const end = rest.slice(1).search(/\n {2}[a-z][a-z0-9-]*:\n|\n[a-z]/);
  return end === -1 ? rest : rest.slice(0, end + 1);
}

/** The value an `environment:` entry renders to (quotes removed), or undefined. */
function variable(block: string, name: string): string | undefined {
  const match = new RegExp(`\\n\\s+${name}: ?(.*)\\n`).exec(block);
  return match ? match[1]!.trim().replace(/^(['"])(.*)\1$/, '$2') : undefined;
}

describe('docker-compose.yml (validated by the compose tool)', () => {
  const env = { TARMAC_API_TOKENS: 'compose-test-token-0123456789', TARMAC_REPO_ALLOW: 'https://git.example.com/acme', TARMAC_HOST_ID: 'machine-1' };
  const rendered = (extra: NodeJS.ProcessEnv = {}) => {
    const result = compose(['config'], { ...env, ...extra });
    assert.equal(result.status, 0, result.stderr);
    return result.stdout;
  };
  after(() => rmSync(project, { recursive: true, force: true }));

  it('is a valid compose file with the distributed services', () => {
    const checked = compose(['config', '-q'], env);
    assert.equal(checked.status, 0, checked.stderr);
    const services = compose(['config', '--services'], env).stdout.trim().split('\n').sort();
    assert.deepEqual(services, ['api', 'postgresql', 'temporal', 'temporal-namespace', 'temporal-schema', 'temporal-ui', 'worker']);
  });

  it('runs temporalio/server (not the deprecated auto-setup) after an admin-tools job that sets up the schema; Tarmac starts once a second job made the namespace', () => {
    const file = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
    assert.doesNotMatch(file, /auto-setup/);
    assert.doesNotMatch(file, /\btctl\b(?!-)/, 'no tctl: the health checks and jobs use what current images ship');
    const output = rendered();
    const temporal = service(output, 'temporal');
    assert.match(temporal, /image: temporalio\/server:\d+\.\d+\.\d+\n/);
    assert.match(temporal, /temporal-schema:\n\s+condition: service_completed_successfully/);
    for (const [job, script] of [
      ['temporal-schema', 'setup-schema.sh'],
      ['temporal-namespace', 'setup-namespace.sh'],
    ] as const) {
      const block = service(output, job);
      assert.match(block, /image: temporalio\/admin-tools:/);
      assert.match(block, new RegExp(`/tarmac-setup/${script.replace('.', '\\.')}`), `${job} runs infra/temporal/${script}`);
      assert.match(block, /infra\/temporal:\/tarmac-setup:ro/);
    }
    assert.match(service(output, 'temporal-namespace'), /temporal:\n\s+condition: service_healthy/);
    for (const tarmac of ['api', 'worker'])
      assert.match(service(output, tarmac), /temporal-namespace:\n\s+condition: service_completed_successfully/, `${tarmac} waits for the namespace`);
  });

  it('has a health check on every long-running service but the UI, none of them tctl', () => {
    const output = rendered();
    for (const name of ['postgresql', 'temporal', 'api', 'worker']) {
      const block = service(output, name);
      assert.match(block, /healthcheck:\n\s+interval/, `${name} has a health check`);
      assert.doesNotMatch(block, /tctl/);
    }
  });

  it('takes the namespace from TARMAC_TEMPORAL_NAMESPACE: the job makes it, the API and the workers use it, the UI shows it', () => {
    const output = rendered({ TARMAC_TEMPORAL_NAMESPACE: 'tarmac-prod' });
    assert.equal(variable(service(output, 'temporal-namespace'), 'TEMPORAL_NAMESPACE'), 'tarmac-prod');
    assert.equal(variable(service(output, 'temporal-ui'), 'TEMPORAL_DEFAULT_NAMESPACE'), 'tarmac-prod');
    for (const name of ['api', 'worker']) assert.equal(variable(service(output, name), 'TARMAC_TEMPORAL_NAMESPACE'), 'tarmac-prod');
  });

  it('gives workers the Docker socket, the data dir and the gateway socket dir (TMPDIR) at the same path inside and out', () => {
    const output = rendered({ TARMAC_COMPOSE_DATA_DIR: '/srv/tarmac-data', TARMAC_COMPOSE_SOCKET_DIR: '/run/tarmac-sockets' });
    const worker = service(output, 'worker');
    assert.match(worker, /\/var\/run\/docker\.sock:\/var\/run\/docker\.sock/);
    assert.match(worker, /\/srv\/tarmac-data:\/srv\/tarmac-data/);
    assert.equal(variable(worker, 'TARMAC_DATA_DIR'), '/srv/tarmac-data');
    // Agent containers mount the gateway's socket directory (under TMPDIR) by its host path.
    assert.match(worker, /\/run\/tarmac-sockets:\/run\/tarmac-sockets/);
    assert.equal(variable(worker, 'TMPDIR'), '/run/tarmac-sockets');
    assert.equal(variable(worker, 'TARMAC_HOST_ID'), 'machine-1');
    assert.equal(variable(worker, 'TARMAC_WORKER_METRICS_PORT'), '9464', 'each worker serves its metrics');
    const api = service(output, 'api');
    assert.match(api, /\/srv\/tarmac-data:\/srv\/tarmac-data:ro/, 'the API reads run logs for the live events, read-only');
    assert.equal(variable(api, 'TARMAC_DATA_DIR'), '/srv/tarmac-data');
  });

  it('overrides what .env says for `tarmac dev` with the addresses and paths of the containers', () => {
    // .env is .env.example: a relative data dir and a loopback Temporal address, right for `tarmac dev` only.
    const output = rendered();
    for (const name of ['api', 'worker']) {
      const block = service(output, name);
      assert.equal(variable(block, 'TARMAC_TEMPORAL_ADDRESS'), 'temporal:7233', name);
      assert.match(variable(block, 'TARMAC_DATA_DIR') ?? '', /^\//, `${name}'s data dir is absolute`);
      assert.equal(variable(block, 'TARMAC_RECIPES_DIR'), '/opt/tarmac/recipes', `${name} reads the mounted recipes`);
      assert.match(block, /\/recipes:\/opt\/tarmac\/recipes:ro/);
    }
    assert.equal(variable(service(output, 'api'), 'TARMAC_API_HOST'), '0.0.0.0');
  });

  it('keeps each secret of .env to the containers that need it: provider keys to workers, API tokens to the API, the database password to Temporal', () => {
    const output = rendered();
    const worker = service(output, 'worker');
    const api = service(output, 'api');
    assert.equal(variable(worker, 'ANTHROPIC_API_KEY'), secrets.ANTHROPIC_API_KEY);
    assert.equal(variable(worker, 'OPENAI_API_KEY'), secrets.OPENAI_API_KEY);
    assert.equal(variable(api, 'ANTHROPIC_API_KEY'), '');
    assert.equal(variable(api, 'OPENAI_API_KEY'), '');
    assert.equal(variable(api, 'TARMAC_API_TOKENS'), env.TARMAC_API_TOKENS);
    assert.equal(variable(worker, 'TARMAC_API_TOKENS'), '');
    for (const name of ['api', 'worker']) assert.equal(variable(service(output, name), 'TEMPORAL_DB_PASSWORD'), '', `${name} has no database password`);
    assert.equal(variable(service(output, 'temporal'), 'POSTGRES_PWD'), secrets.TEMPORAL_DB_PASSWORD);
    assert.equal(variable(service(output, 'temporal-schema'), 'SQL_PASSWORD'), secrets.TEMPORAL_DB_PASSWORD);
  });

  for (const name of ['TARMAC_API_TOKENS', 'TARMAC_REPO_ALLOW', 'TARMAC_HOST_ID', 'TEMPORAL_DB_PASSWORD']) {
    it(`refuses to render without ${name}, naming the variable`, () => {
      const refused = compose(['config', '-q'], { ...env, [name]: '' });
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, new RegExp(name));
    });
  }

  it('passes what .env says to the API and the workers (env_file): the required settings from the file alone, and one the compose file does not name', () => {
    // A project whose .env alone has the required settings (none of them in the shell environment),
    // and a setting the compose file does not name: both reach the containers' environment.
    const dir = mkdtempSync(join(tmpdir(), 'tarmac-compose-env-'));
    const fromFile = {
      TARMAC_API_TOKENS: 'dotenv-token-0123456789abcdef',
      TARMAC_REPO_ALLOW: 'https://git.example.com/from-dotenv',
      TARMAC_HOST_ID: 'dotenv-host',
      TARMAC_API_CORS_ORIGINS: 'https://ops.example.com',
    };
    writeFileSync(
      join(dir, '.env'),
      `${dotenv}${Object.entries(fromFile)
        .map(([name, value]) => `${name}=${value}\n`)
        .join('')}`,
    );
    const shell: NodeJS.ProcessEnv = { ...process.env, TARMAC_API_CORS_ORIGINS: 'https://shell.example.com' };
    for (const name of ['TARMAC_API_TOKENS', 'TARMAC_REPO_ALLOW', 'TARMAC_HOST_ID']) delete shell[name];
    const standalone = spawnSync('docker-compose', ['version'], { stdio: 'ignore' }).status === 0;
    const [command, prefix] = standalone ? ['docker-compose', []] : ['docker', ['compose']];
    const result = spawnSync(command, [...prefix, '-f', join(root, 'docker-compose.yml'), '--project-directory', dir, 'config'], {
      cwd: dir,
      env: shell,
      encoding: 'utf8',
    });
    rmSync(dir, { recursive: true, force: true });
    assert.equal(result.status, 0, result.stderr);
    const api = service(result.stdout, 'api');
    assert.equal(variable(api, 'TARMAC_REPO_ALLOW'), fromFile.TARMAC_REPO_ALLOW, 'TARMAC_REPO_ALLOW from .env reaches the API');
    assert.equal(variable(api, 'TARMAC_API_TOKENS'), fromFile.TARMAC_API_TOKENS);
    assert.equal(variable(service(result.stdout, 'worker'), 'TARMAC_HOST_ID'), fromFile.TARMAC_HOST_ID);
    // Unlike `tarmac dev`, compose gives a container its env_file as written: the shell environment
    // changes only the ${…} of the compose file (README, `.env`).
    assert.equal(variable(api, 'TARMAC_API_CORS_ORIGINS'), fromFile.TARMAC_API_CORS_ORIGINS, 'a setting only .env has reaches the API as written');
  });

  it('registers every search attribute the workflows declare, with the same type (infra/temporal/setup-namespace.sh)', () => {
    const script = readFileSync(join(root, 'infra', 'temporal', 'setup-namespace.sh'), 'utf8');
    for (const declaration of searchAttributeDeclarations) assert.ok(script.includes(declaration), `${declaration} is registered`);
  });
});
