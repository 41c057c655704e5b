/**
 * The gateway's `search` tool, run inside the session's own container with GNU grep
 * (`grep -E`) under `timeout`, never on the worker.
 *
 * Why not a regex engine on the worker: the worker's event loop carries every
 * activity's heartbeat, and an agent chooses the pattern. JS RegExp backtracks
 * (`(a+)+$` over a line of a's never ends); a linear-time engine (re2js, pure JS) would
 * still spend the worker's CPU on the event loop, bounded only by how much we let it
 * scan. In the container the scan costs the session's own CPU and memory limits, is
 * killed after `seconds`, sees only the session's files (a link there leads to the
 * container's filesystem, never the host's), and the worker only reads a few hundred
 * capped lines back. GNU grep matches -E patterns without back-references with a DFA
 * (linear); a back-reference can be slow, and then the timeout ends it.
 */
export const searchLimits = {
  /** Longest pattern accepted, in characters. */
  patternChars: 1000,
  /** Files scanned at most (the first ones `find` lists). */
  files: 5000,
  /** Files of this size or more are skipped (KiB). */
  fileKiB: 1024,
  /** Matches reported at most, and per file. */
  hits: 500,
  hitsPerFile: 50,
  /** A reported line is cut to this many bytes. */
  lineBytes: 400,
  /** Wall time of one search inside the container. */
  seconds: 10,
} as const;

/**
 * The argv of one search inside the container, for `pattern` under the workspace-relative
 * (already confined) `path`. Pattern and path are arguments, never shell text.
 */
export function searchCommand(pattern: string, path: string, limits = searchLimits): string[] {
  const script = [
    // .git pruned in any case; node_modules skipped as before; links are not followed (no -L).
    `find "$2" \\( -iname .git -o -name node_modules \\) -prune -o -type f -size -${limits.fileKiB}k -print0`,
    `head -z -n ${limits.files}`,
    `xargs -0 -r grep -I -n -H -E -m ${limits.hitsPerFile} -e "$1" --`,
    `cut -b 1-${limits.lineBytes}`,
    `head -n ${limits.hits + 1}`,
  ].join(' | ');
  const start = path === '.' ? '.' : `./${path}`;
  return ['timeout', '-s', 'KILL', String(limits.seconds), 'sh', '-c', script, 'search', pattern, start];
}

/** The tool's answer from what the container printed: hits as `path:line:text`, and what stopped it. */
export function searchAnswer(
  result: { exitCode: number; stdout: string; stderr: string },
  limits = searchLimits,
): { text: string; hits: number; isError: boolean } {
  if (result.exitCode === 137 || result.exitCode === 124) {
    return {
      text: `search: stopped after ${limits.seconds} s (the pattern or the tree is too slow to search); narrow the path or simplify the pattern`,
      hits: 0,
      isError: true,
    };
  }
  const lines = result.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => line.replace(/^\.\//, ''));
  const errors = result.stderr.split('\n').filter(Boolean);
  if (lines.length === 0 && errors.length > 0) return { text: `search: ${errors.slice(0, 5).join('\n')}`, hits: 0, isError: true };
  const hits = lines.slice(0, limits.hits);
  const notes = lines.length > limits.hits ? [`[search stopped at ${limits.hits} matches]`] : [];
  return { text: [...hits, ...notes].join('\n'), hits: hits.length, isError: false };
}
