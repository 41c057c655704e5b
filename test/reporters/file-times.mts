// A node:test reporter that profiles the run by file: the time of each file's top-level tests and
// suites (their hooks included), written as JSON to TARMAC_TEST_TIMES (default
// artifacts/test-file-times.json) and the slowest files printed at the end. scripts/test.sh runs
// it beside the spec and TAP reporters; test/README.md quotes its figures.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import type { TestEvent } from 'node:test/reporters';

interface FileTime {
  file: string;
  ms: number;
  tests: number;
  failed: number;
}

export default async function* fileTimes(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const files = new Map<string, FileTime>();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details } = event.data;
    if (!file || nesting !== 0) continue;
    const name = relative(process.cwd(), file);
    const entry = files.get(name) ?? { file: name, ms: 0, tests: 0, failed: 0 };
    entry.ms += details?.duration_ms ?? 0;
    entry.tests += 1;
    if (event.type === 'test:fail') entry.failed += 1;
    files.set(name, entry);
  }
  const sorted = [...files.values()].sort((a, b) => b.ms - a.ms);
  const path = process.env.TARMAC_TEST_TIMES || 'artifacts/test-file-times.json';
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(sorted, null, 1)}\n`);
  const total = sorted.reduce((sum, entry) => sum + entry.ms, 0);
  yield `[test] ${sorted.length} files, ${(total / 60_000).toFixed(1)} min of file time; the slowest:\n`;
  for (const entry of sorted.slice(0, 12)) yield `[test]   ${(entry.ms / 1000).toFixed(0).padStart(5)} s  ${entry.file}\n`;
}
