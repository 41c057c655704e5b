// Runs test files N at a time in the order given (scripts/test.sh passes them slowest first, through
// test/order-files.ts; `node --test` would sort them by name) with three reporters: spec to stdout, a
// TAP record appended to the file named second, and the time of each file (reporters/file-times.mts).
// Usage: node --import tsx test/run-files.ts <concurrency> <tap file> <file>...
// Exits 1 when a test failed, as `node --test` does.
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';
import { pathToFileURL } from 'node:url';

async function main(): Promise<void> {
  const [concurrency = '1', tapPath = 'artifacts/test-run.tap', ...files] = process.argv.slice(2);
  // The reporter is an ES module (node:test loads reporters as such); imported by its URL.
  const fileTimes = (
    (await import(pathToFileURL(join(__dirname, 'reporters', 'file-times.mts')).href)) as {
      default: (source: AsyncIterable<unknown>) => AsyncGenerator<string>;
    }
  ).default;
  const events = run({ files, concurrency: Number(concurrency), execArgv: ['--import', 'tsx'] });
  events.on('test:fail', (data) => {
    if (!data.todo) process.exitCode = 1;
  });
  const branch = () => events.pipe(new PassThrough({ objectMode: true }));
  const specOut = branch().compose(new spec());
  const tapOut = branch().compose(tap);
  const timesOut = branch().compose(fileTimes);
  specOut.pipe(process.stdout, { end: false });
  await Promise.all([
    pipeline(tapOut, createWriteStream(tapPath)),
    new Promise<void>((done) => specOut.on('end', done)),
    (async () => {
      for await (const chunk of timesOut) process.stdout.write(chunk);
    })(),
  ]);
}

void main();
