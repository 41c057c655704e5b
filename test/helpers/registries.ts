import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The package registries this machine's own tools are configured for, read at run time: the
 * repository names no registry host (a workplace rule, and a user's registry is theirs). Tests pass
 * these hosts to TARMAC_EGRESS_ALLOW as an operator would.
 */
export function npmRegistry(): { url: string; host: string; address: string } {
  const url = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim().replace(/\/?$/, '/');
  const host = new URL(url).hostname;
  // One of its addresses, for probes that must not reach it (a gate, an agent's command).
  const address = execFileSync('getent', ['ahostsv4', host], { encoding: 'utf8' }).split(/\s+/)[0] ?? '';
  return { url, host, address };
}

/** The PyPI hosts pip itself knows (its index and its file host), from pip's own module. */
export function pypiHosts(): { index: string; files: string } {
  const out = execFileSync('python3', ['-c', 'from pip._internal.models.index import PyPI; print(PyPI.netloc); print(PyPI.file_storage_domain)'], {
    encoding: 'utf8',
  })
    .trim()
    .split('\n');
  return { index: out[0]!, files: out[1]! };
}

/** The lockfile the machine's own npm (its registry) makes for a package.json's text, as a user's would be. */
export function npmLockfile(packageJson: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'tarmac-lock-'));
  try {
    writeFileSync(join(dir, 'package.json'), packageJson);
    execFileSync('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund', '--registry', npmRegistry().url], { cwd: dir, stdio: 'ignore' });
    return readFileSync(join(dir, 'package-lock.json'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
