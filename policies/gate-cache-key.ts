/**
 * The gate cache key: a suite's result on a tree is reused only for the same tree, the same suite
 * definition and the same runner image. The definition is everything that decides what runs — the
 * suite's entry in the gate file as a whole (id, argv, timeout, any field added later), its
 * effective timeout, the container's environment and the sandbox it runs in; the image is the ID
 * Docker reports (`sha256:…`), not its tag, so a rebuilt image is another key. Pure: the caller
 * (activities/stores/gate-cache.ts) digests the definition's text; the path is safe as a file name.
 */
export interface GateCacheKey {
  treeSha: string;
  suiteId: string;
  /** `sha256:<hex>` of `suiteDefinitionText`. */
  suiteDigest: string;
  /** The runner image's ID as Docker reports it (`sha256:<hex>`). */
  imageId: string;
}

export interface GateSuiteDefinition {
  /** The suite as the gate file declares it (every field counts, known or not). */
  suite: { id: string; run: string[] } & Record<string, unknown>;
  timeoutMs: number;
  /** The container's environment, in order (the tree's own SHA left out: it is the key's tree). */
  env: string[];
  /** The sandbox's version (user, limits, mounts, network): a change to it is a change to what runs. */
  sandbox: string;
}

/** Object keys sorted at every depth: the same definition is the same text, whatever order the file wrote it in. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== 'object') return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = canonical((value as Record<string, unknown>)[key]);
  return sorted;
}

/** The text the suite digest is taken of: same definition ⇔ same text. Array order counts (argv, env). */
export function suiteDefinitionText(definition: GateSuiteDefinition): string {
  return JSON.stringify({ suite: canonical(definition.suite), timeoutMs: definition.timeoutMs, env: definition.env, sandbox: definition.sandbox });
}

const treePattern = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
const digestPattern = /^sha256:[0-9a-f]{64}$/;

/** Where the key's entry lives under the cache root: `<tt>/<tree>/<suite>/<suite digest>-<image id>` (+ `.json`, `.log`). */
export function gateCachePath(key: GateCacheKey): string {
  if (!treePattern.test(key.treeSha)) throw new Error(`gate cache key: treeSha is not a tree SHA: ${key.treeSha}`);
  if (!digestPattern.test(key.suiteDigest)) throw new Error(`gate cache key: suiteDigest is not a sha256 digest: ${key.suiteDigest}`);
  if (!digestPattern.test(key.imageId)) throw new Error(`gate cache key: imageId is not a sha256 image ID: ${key.imageId}`);
  const suite = key.suiteId.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+/, '_') || '_';
  return `${key.treeSha.slice(0, 2)}/${key.treeSha}/${suite}/${key.suiteDigest.slice(7)}-${key.imageId.slice(7)}`;
}

export function sameGateKey(a: GateCacheKey, b: GateCacheKey): boolean {
  return a.treeSha === b.treeSha && a.suiteId === b.suiteId && a.suiteDigest === b.suiteDigest && a.imageId === b.imageId;
}

/** What a finished suite run says about its tree. */
export interface SuiteRunFacts {
  status: 'passed' | 'failed' | 'timed-out';
  /** The kernel killed it for memory. */
  oomKilled: boolean;
  /** Its log file could be read (the cache keeps the log with the result). */
  logKept: boolean;
}

type SealDecision = { seal: true } | { seal: false; reason: string };

/**
 * Which results are sealed: a pass and a red exit are verdicts on the tree (a red one is reused
 * only for the identical tree; a re-run that does not want it asks for a fresh run). A timeout or
 * an OOM kill says more about the machine than the tree, and a result without its log cannot be
 * shown again: none of these is kept.
 */
export function sealDecision(facts: SuiteRunFacts): SealDecision {
  if (facts.status === 'timed-out') return { seal: false, reason: 'timed out: says nothing about the tree' };
  if (facts.oomKilled) return { seal: false, reason: 'killed for memory: says more about the machine than the tree' };
  if (!facts.logKept) return { seal: false, reason: 'its log could not be read: a reused result must keep its log' };
  return { seal: true };
}
