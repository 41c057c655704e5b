import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

/**
 * The README is a front door and the docs are read in short pieces (issue 25): these checks keep
 * them so. Pure file reads: no server, no Docker.
 */
const root = join(__dirname, '..', '..');
const readmeMaxLines = 200;
const demoWithinLines = 40;
const paragraphMaxWords = 120;

/** Every markdown file the rules cover: README.md and docs/**\/*.md. */
function docFiles(): string[] {
  const walk = (directory: string): string[] =>
    readdirSync(directory).flatMap((name) => {
      const path = join(directory, name);
      if (statSync(path).isDirectory()) return walk(path);
      return name.endsWith('.md') ? [path] : [];
    });
  return [join(root, 'README.md'), ...walk(join(root, 'docs'))];
}

const fence = /^\s*(```|~~~)/;
const listItem = /^\s*([-*+]|\d+[.)])\s/;

/**
 * The paragraphs of a markdown text outside fenced code: blocks of consecutive non-blank lines that
 * are not headings or table rows. A list item is a paragraph of its own (with its continuation
 * lines). Returns each one's first line (1-based) and its word count.
 */
export function paragraphs(text: string): { line: number; words: number }[] {
  const found: { line: number; words: number }[] = [];
  let current: { line: number; words: number } | undefined;
  let inFence = false;
  const flush = () => {
    if (current) found.push(current);
    current = undefined;
  };
  text.split('\n').forEach((line, index) => {
    if (fence.test(line)) {
      flush();
      inFence = !inFence;
      return;
    }
    if (inFence) return;
    if (!line.trim() || /^\s*(#|\|)/.test(line)) return flush();
    if (listItem.test(line)) flush();
    current ??= { line: index + 1, words: 0 };
    // A word has a letter or a digit: list markers, dashes and arrows are not words.
    current.words += line.split(/\s+/).filter((token) => /[\p{L}\p{N}]/u.test(token)).length;
  });
  flush();
  return found;
}

/** The line (1-based) where the first fenced code block that runs a landing opens, or undefined. */
export function demoLine(text: string): number | undefined {
  const lines = text.split('\n');
  let open: number | undefined;
  for (const [index, line] of lines.entries()) {
    if (!fence.test(line)) {
      if (open !== undefined && /\btarmac(\.sh)? land\b/.test(line)) return open + 1;
      continue;
    }
    open = open === undefined ? index : undefined;
  }
  return undefined;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a markdown text defines (repeated headings get -1, -2, … as on GitHub). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let inFence = false;
  for (const line of text.split('\n')) {
    if (fence.test(line)) inFence = !inFence;
    const heading = !inFence && /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const base = anchorOf(heading[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count ? `${base}-${count}` : base);
  }
  return result;
}

/** The relative links of a markdown text outside code: [text](target), with their lines. */
export function relativeLinks(text: string): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = [];
  let inFence = false;
  text.split('\n').forEach((line, index) => {
    if (fence.test(line)) inFence = !inFence;
    if (inFence) return;
    const prose = line.replace(/`[^`]*`/g, '');
    for (const match of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      links.push({ line: index + 1, target });
    }
  });
  return links;
}

describe('the paragraph, demo and link rules', () => {
  const cases: { name: string; text: string; expected: { paragraphs: number[]; demo?: number; links: string[] } }[] = [
    { name: 'two paragraphs split by a blank line', text: 'one two\nthree\n\nfour', expected: { paragraphs: [3, 1], links: [] } },
    { name: 'a list item is a paragraph of its own', text: 'intro words\n- a b\n  c\n- d', expected: { paragraphs: [2, 3, 1], links: [] } },
    { name: 'code, headings and tables are no paragraphs', text: '# Title words\n```\nx y z\n```\n| a | b |', expected: { paragraphs: [], links: [] } },
    {
      name: 'the demo is the first code block that lands',
      text: 'x\n```sh\nnpm run up\n```\n```sh\nbin/tarmac.sh land "$R" b\n```',
      expected: { paragraphs: [1], demo: 5, links: [] },
    },
    {
      name: 'links outside code, not URLs',
      text: 'see [a](docs/A.md#x) and [b](https://e.org) `[c](no.md)`',
      expected: { paragraphs: [5], links: ['docs/A.md#x'] },
    },
  ];
  for (const { name, text, expected } of cases) {
    it(name, () => {
      assert.deepEqual(
        paragraphs(text).map((p) => p.words),
        expected.paragraphs,
      );
      assert.equal(demoLine(text), expected.demo);
      assert.deepEqual(
        relativeLinks(text).map((l) => l.target),
        expected.links,
      );
    });
  }
  it('anchors as GitHub makes them', () => {
    assert.equal(anchorOf("Environments: the repository's dependencies"), 'environments-the-repositorys-dependencies');
    assert.equal(anchorOf('The `.env` file'), 'the-env-file');
  });
});

describe('the README is a front door', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  it(`has at most ${readmeMaxLines} lines`, () => {
    const lines = readme.trimEnd().split('\n').length;
    assert.ok(lines <= readmeMaxLines, `README.md has ${lines} lines`);
  });
  it(`shows the demo (a landing) within its first ${demoWithinLines} lines`, () => {
    const line = demoLine(readme);
    assert.ok(line !== undefined, 'README.md has no code block that runs `tarmac land`');
    assert.ok(line <= demoWithinLines, `the demo begins at line ${line}`);
  });
  it('names the two commands', () => {
    assert.match(readme, /^npm run up\s+#/m);
    assert.match(readme, /^npm test\s+#/m);
  });
  for (const doc of ['docs/SETUP.md', 'docs/OPERATING.md']) {
    it(`${doc} exists`, () => assert.ok(existsSync(join(root, doc)), `${doc} is missing`));
  }
});

describe('the docs read in short pieces', () => {
  it(`no paragraph in README.md or docs/ is over ${paragraphMaxWords} words`, () => {
    const long = docFiles().flatMap((file) =>
      paragraphs(readFileSync(file, 'utf8'))
        .filter((p) => p.words > paragraphMaxWords)
        .map((p) => `${relative(root, file)}:${p.line} (${p.words} words)`),
    );
    assert.deepEqual(long, [], `paragraphs over ${paragraphMaxWords} words:\n${long.join('\n')}`);
  });
  it('every relative link resolves to a file, and to its heading', () => {
    const broken = docFiles().flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return relativeLinks(text).flatMap(({ line, target }) => {
        const [path = '', anchor] = target.split('#');
        const goal = path ? resolve(dirname(file), decodeURIComponent(path)) : file;
        const where = `${relative(root, file)}:${line} → ${target}`;
        if (!existsSync(goal)) return [`${where} (no such file)`];
        if (anchor && goal.endsWith('.md') && !anchors(readFileSync(goal, 'utf8')).has(anchor)) return [`${where} (no such heading)`];
        return [];
      });
    });
    assert.deepEqual(broken, [], `broken links:\n${broken.join('\n')}`);
  });
});
