import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readManifest, recordInManifest, writeFileAtomic } from '../../activities/stores/run-store';

describe('run store: parallel writers of one run (parallel reviewer sessions)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tarmac-run-store-unit-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const base = { runId: 'r', repo: 'file:///x', mirror: '/m', hostId: 'h', createdAt: '2026-01-01T00:00:00.000Z', containerRunLabel: 'r' };

  it('twenty manifest updates at once: valid JSON, every entry kept', async () => {
    const path = join(dir, 'manifest.json');
    const dirs = Array.from({ length: 20 }, (_, index) => `/runs/r/sessions/s${index}`);
    await Promise.all(dirs.map((entry) => recordInManifest(path, base, { dirs: [entry] })));
    const manifest = await readManifest(path);
    assert.deepEqual([...manifest!.dirs].sort(), [...dirs].sort());
  });

  it('writes of one path in the same instant never interleave: the file is one of them, whole; no temp file left', async () => {
    const path = join(dir, 'same.json');
    const contents = Array.from({ length: 20 }, (_, index) => `${JSON.stringify({ index, pad: 'x'.repeat(index * 50) })}\n`);
    await Promise.all(contents.map((content) => writeFileAtomic(path, content, { durable: false })));
    assert.ok(contents.includes(readFileSync(path, 'utf8')));
    assert.deepEqual(
      readdirSync(dir).filter((name) => name.startsWith('same.json.')),
      [],
    );
  });
});
