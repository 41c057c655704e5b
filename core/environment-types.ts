/**
 * What crosses between the environment activities (activities/environments/environments.ts) and the workflows
 * that use them. Pure types: sandbox-safe.
 */

/** One connection a setup made (or tried) through the egress gateway, as the run records it. */
export interface EgressEntry {
  host: string;
  port: number;
  allowed: boolean;
  bytesUp: number;
  bytesDown: number;
  /** Why it was refused. */
  reason?: string;
  /** Why an allowed connection failed (the name did not resolve, the host was unreachable). */
  error?: string;
}

/** A ready environment, as gates and command containers use it. */
export interface EnvironmentRef {
  /** `sha256:<hex>` of the declaration, the base image's ID and the inputs' blobs. */
  key: string;
  /** The base image gates and commands run on. */
  image: string;
  /** Paths (relative to the workspace) the setup produced; each linked into a snapshot where the tree has nothing. */
  products: string[];
  /** The declaration's environment entries (`env` / `containerEnv`). */
  env: Record<string, string>;
  /** ENV_CACHE: hit = reused from the host's environments, miss = built by this step. */
  cache: 'hit' | 'miss';
  /** How long the build took (the build's own, also for a hit). */
  buildMs: number;
  /** Every connection the build's setup made through the egress gateway. */
  egress: EgressEntry[];
}

/** A setup that did not produce an environment: what failed, named. */
export interface EnvironmentFailure {
  key: string;
  /** One line: the failing command and its exit, a timeout, the size limit. */
  why: string;
  /** The failing setup command and its index in the declaration's `setup`, when the log names it. */
  index?: number;
  command?: string;
  exitCode: number | null;
  /** The data-dir reference of the setup's log. */
  logRef: string;
  logTail: string;
  /** Hosts the gateway refused (`host:port`). */
  refused: string[];
  /** Hosts the declaration asked for that the operator's allow-list does not allow. */
  refusedDeclared?: string[];
  egress: EgressEntry[];
  /** The tree under test has other inputs than the base: the branch's own change broke its setup (a fixup round may mend it). */
  branchChangedInputs: boolean;
}
