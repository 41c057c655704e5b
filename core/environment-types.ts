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

/**
 * A repository's environment as it declares it: the gate file's `environment`, or (when the gate
 * file has none) `.devcontainer/devcontainer.json`. Both become this one shape, and the key of what
 * gets built depends only on it (never on which file said it), so moving a declaration from one
 * file to the other keeps its environments. Pure and sandbox-safe: workflows read it too.
 */
export interface EnvironmentDeclaration {
  source: 'gate-file' | 'devcontainer';
  /** The repository-relative file it was read from. */
  file: string;
  /** The base image. Exactly one of `image` and `dockerfile` is set; with neither declared, the gate file's `image`, else the runner. */
  image?: string;
  /** A Dockerfile in the repository to build the base from; `path` and `context` are repository-relative (`.` is the root). */
  dockerfile?: { path: string; context: string; args: Record<string, string> };
  /** Shell command lines, run in order with `sh -c`; may be empty. */
  setup: string[];
  /**
   * Repository-relative files and directories whose content keys the environment. A path the tree
   * does not have counts as absent in the key (so adding the file later is a new environment). A
   * Dockerfile is always one of them; files it COPYs from its context are keyed only when listed.
   */
  inputs: string[];
  /** Hosts the setup needs: the operator's allow-list narrowed to them. Absent: the operator's list as it is. */
  egress?: string[];
  /** Container directories under /tmp/home/ a later build of the same repository may reuse. */
  cache: string[];
  /** Variables for the setup, the gates and agents' commands. */
  env: Record<string, string>;
  /** The whole setup's limit (default 20 minutes). */
  timeoutMs: number;
  /** The user the devcontainer runs its commands as. */
  remoteUser?: string;
}
