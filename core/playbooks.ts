/**
 * Deterministic playbooks: a known error signature plus preconditions on the tree
 * give a patch, without any agent. Pure: the tree is read through `read` and the
 * patch is returned as file contents; the capsule writes and commits it.
 */
import { editDistance } from './harness-models';

export type PlaybookKind = 'make-target-from-script' | 'make-target-typo' | 'npm-script-from-make';

export interface Playbook {
  id: string;
  description?: string;
  signature: string;
  kind: PlaybookKind;
}

export interface PlaybookPatch {
  playbookId: string;
  /** path → new content */
  files: Record<string, string>;
  summary: string;
}

/** Reads a file of the tree; undefined when it does not exist. */
export type ReadFile = (path: string) => string | undefined;

function makeTargets(makefile: string): string[] {
  return [...makefile.matchAll(/^([A-Za-z0-9_.-]+)\s*:(?!=)/gm)].map((match) => match[1]!).filter((name) => name !== '.PHONY');
}

const kinds: Record<PlaybookKind, (groups: Record<string, string>, read: ReadFile) => Omit<PlaybookPatch, 'playbookId'> | undefined> = {
  'make-target-from-script': ({ target }, read) => {
    const makefile = read('Makefile');
    if (!target || makefile === undefined || makeTargets(makefile).includes(target)) return undefined;
    const script = [`scripts/${target}.sh`, `scripts/${target}`].find((path) => read(path) !== undefined);
    if (!script) return undefined;
    const separator = makefile.endsWith('\n') || makefile === '' ? '' : '\n';
    return {
      files: { Makefile: `${makefile}${separator}\n.PHONY: ${target}\n${target}:\n\tsh ${script}\n` },
      summary: `added make target "${target}" that runs ${script}`,
    };
  },
  'make-target-typo': ({ target }, read) => {
    const makefile = read('Makefile');
    if (!target || makefile === undefined) return undefined;
    const targets = makeTargets(makefile);
    if (targets.includes(target)) return undefined;
    const closest = targets
      .map((name) => ({ name, distance: editDistance(name, target) }))
      .filter(({ distance }) => distance > 0 && distance <= 2)
      .sort((a, b) => a.distance - b.distance)[0];
    const reference = new RegExp(`(?<=[\\s:])${target.replace(/[.]/g, '\\.')}(?=\\s|$)`, 'gm');
    if (!closest || !reference.test(makefile)) return undefined;
    return { files: { Makefile: makefile.replace(reference, closest.name) }, summary: `fixed the reference to make target "${target}" → "${closest.name}"` };
  },
  'npm-script-from-make': ({ script }, read) => {
    const pkgText = read('package.json');
    const makefile = read('Makefile');
    if (!script || pkgText === undefined || makefile === undefined) return undefined;
    if (!new RegExp(`npm run ${script.replace(/[.]/g, '\\.')}(\\s|$)`, 'm').test(makefile)) return undefined;
    let pkg: { scripts?: Record<string, string> };
    try {
      pkg = JSON.parse(pkgText) as { scripts?: Record<string, string> };
    } catch {
      return undefined;
    }
    if (pkg.scripts?.[script]) return undefined;
    const file = [`scripts/${script}.sh`, `scripts/${script}.js`, `scripts/${script}.mjs`].find((path) => read(path) !== undefined);
    if (!file) return undefined;
    const command = file.endsWith('.sh') ? `sh ${file}` : `node ${file}`;
    const updated = { ...pkg, scripts: { ...(pkg.scripts ?? {}), [script]: command } };
    return { files: { 'package.json': `${JSON.stringify(updated, null, 2)}\n` }, summary: `added npm script "${script}": ${command}` };
  },
};

/** The first playbook whose signature matches the output and whose preconditions hold, with its patch. */
export function matchPlaybook(playbooks: readonly Playbook[], output: string, read: ReadFile): PlaybookPatch | undefined {
  for (const playbook of playbooks) {
    const match = new RegExp(playbook.signature, 'm').exec(output);
    if (!match) continue;
    const patch = kinds[playbook.kind](match.groups ?? {}, read);
    if (patch) return { playbookId: playbook.id, ...patch };
  }
  return undefined;
}
