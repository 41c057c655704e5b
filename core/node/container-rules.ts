/**
 * Rules for the containers Tarmac runs (gate suites and agent sessions): their
 * deterministic names and the networks they may have. Pure: no I/O.
 */
import { createHash } from 'node:crypto';

/** Docker's container name rule (`[a-zA-Z0-9][a-zA-Z0-9_.-]+`). */
export const dockerNamePattern = /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/;

/** Longest readable part of a name; the hash comes after it. */
const maxReadable = 100;

/**
 * The one name of a step's container: the same (run, step) always gives the same name,
 * so Docker itself refuses a second container for a step (409 Conflict) when two
 * attempts race. The step names the attempt where there is one (`session-…-a2`).
 *
 * The readable part is the run and step with every character outside Docker's rule
 * replaced by `_`, cut to 100 characters; the hash of the exact pair follows it, so two
 * different pairs that clean up to the same text (`a/b` and `a_b`, or a run ending in
 * `-x` with a step, against a run with a step starting `x-`) still get different names.
 */
export function containerName(run: string, step: string): string {
  const clean = `tarmac-${run}-${step}`.replace(/[^a-zA-Z0-9_.-]/g, '_').slice(0, maxReadable);
  const digest = createHash('sha256')
    .update(JSON.stringify([run, step]))
    .digest('hex')
    .slice(0, 16);
  return `${clean}-${digest}`;
}

type NetworkCheck = { ok: true } | { ok: false; message: string };

/**
 * Every container Tarmac runs holds untrusted code (an agent, or a gate suite: the
 * branch's own scripts), so each gets network `none` and nothing else, whatever its
 * role. The host network reaches the Temporal frontend and the API on loopback: an
 * agent there could answer its own approval question. Whatever a session needs from
 * outside comes through the unix sockets the worker mounts into it.
 */
export function checkNetwork(role: string | undefined, networkMode: string | undefined): NetworkCheck {
  const mode = networkMode ?? 'none';
  if (mode === 'none') return { ok: true };
  return { ok: false, message: `network "${mode}" refused for a ${role ?? 'unlabelled'} container: agent and gate containers get network "none" only` };
}
