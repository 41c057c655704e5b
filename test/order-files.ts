// Orders test files for a run of N at a time: the slowest first, by their times in the last measured
// run (test/file-times.json: a copy of a run's artifacts/test-file-times.json), files with no recorded
// time before them (a new file may be slow). Started longest first, the run does not end on one long
// file running alone while the other slots are empty (longest-processing-time-first scheduling).
// Prints one file per line.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Recorded {
  file: string;
  ms: number;
}

const recordedPath = join(__dirname, 'file-times.json');
const recorded = existsSync(recordedPath) ? (JSON.parse(readFileSync(recordedPath, 'utf8')) as Recorded[]) : [];
const times = new Map(recorded.map((entry) => [entry.file, entry.ms]));
// The unit files run in one process (run-unit.ts); the record has them by file.
const unitMs = recorded.filter((entry) => entry.file.startsWith('test/unit/')).reduce((sum, entry) => sum + entry.ms, 0);
if (unitMs > 0) times.set('test/run-unit.ts', unitMs);
/** A file's weight: its recorded time, or more than any when it has none. */
const weight = (file: string): number => times.get(file) ?? Number.POSITIVE_INFINITY;
const files = process.argv.slice(2);
const ordered = files.map((file, index) => ({ file, index })).sort((a, b) => weight(b.file) - weight(a.file) || a.index - b.index);
process.stdout.write(ordered.map((entry) => `${entry.file}\n`).join(''));
