/**
 * Deterministic playbooks: recipe data (recipes/playbooks.json) says which error signature calls
 * which matcher; the matcher checks its premise on the tree and returns the smallest edit that
 * repairs it, as line edits. No agent involved. Every matcher is general — it knows a kind of
 * mistake, never a repository — and returns nothing when its premise is false (no wiring to a
 * script that does not exist, no alias for a target that is no near miss, no guess between two
 * equally near names). Pure: the tree is read through `tree.read`; the capsule writes and commits.
 */
import { findRule, textualMakeTargets, type RuleLines } from './make-database';
import type { MakeDatabase } from '../core/fix-types';
import { addPackageScript, appendLines, isMinimal, maxEdits, parsePackageJson, type LineEdit } from './line-edit';
import { nearMiss, pathNearness } from './near-miss';

/** The matchers a playbook's `kind` may name. */
export const playbookKinds = [
  'make-target-from-script',
  'make-target-typo',
  'make-target-alias',
  'npm-script-from-make',
  'npm-script-alias',
  'module-path-near-miss',
] as const;
export type PlaybookKind = (typeof playbookKinds)[number];

export interface Playbook {
  id: string;
  description?: string;
  /** A regular expression over the failure's output; its named groups are the matcher's input. */
  signature: string;
  /** The matcher that checks the premise and makes the edit. */
  kind: PlaybookKind;
}

interface PlaybookPatch {
  playbookId: string;
  edits: LineEdit[];
  summary: string;
}

/** The tree a matcher sees: files read on demand (undefined when absent), the list of files, make's database. */
export interface PlaybookTree {
  read(path: string): string | undefined;
  /** Regular files of the tree. */
  files: readonly string[];
  make: MakeDatabase | null;
}

type Matcher = (groups: Readonly<Record<string, string | undefined>>, tree: PlaybookTree) => { edits: LineEdit[]; summary: string } | undefined;

const makefileNames = ['GNUmakefile', 'makefile', 'Makefile'];
/** A path inside the repository as make or a trace names it (no absolute path, no `..`). */
const repoPath = (path: string): string | undefined => {
  const clean = path.replace(/^\.\//, '');
  return clean.startsWith('/') || clean.split('/').includes('..') || clean === '' ? undefined : clean;
};

/** The makefile make reads first: make's own word when it gave one, else the first of make's names that exists. */
function topMakefile(tree: PlaybookTree): { path: string; text: string } | undefined {
  const first = tree.make?.makefiles[0] && repoPath(tree.make.makefiles[0]);
  for (const path of first ? [first] : makefileNames) {
    const text = tree.read(path);
    if (text !== undefined) return { path, text };
  }
  return undefined;
}

const makeTargets = (tree: PlaybookTree, top: { text: string }): string[] =>
  tree.make ? tree.make.targets.map((target) => target.name) : textualMakeTargets(top.text);
const makefilesOf = (tree: PlaybookTree, top: { path: string }): string[] => [
  ...new Set([top.path, ...(tree.make?.makefiles ?? []).flatMap((path) => repoPath(path) ?? [])]),
];

/** The rule defining a target: in the file make says holds its recipe, else the first makefile whose text has it. */
function locateRule(tree: PlaybookTree, top: { path: string }, name: string): { path: string; rule: RuleLines } | undefined {
  const recipe = tree.make?.targets.find((target) => target.name === name)?.recipe;
  const recipeFile = recipe && repoPath(recipe.file);
  if (recipe && recipeFile) {
    const text = tree.read(recipeFile);
    const rule = text === undefined ? undefined : findRule(text, name, recipe.line);
    if (rule) return { path: recipeFile, rule };
  }
  for (const path of makefilesOf(tree, top)) {
    const text = tree.read(path);
    const rule = text === undefined ? undefined : findRule(text, name);
    if (rule) return { path, rule };
  }
  return undefined;
}

function readPackage(tree: PlaybookTree) {
  const text = tree.read('package.json');
  if (text === undefined) return undefined;
  const parsed = parsePackageJson(text);
  return 'error' in parsed ? undefined : { text, scripts: parsed.scripts };
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const makeTargetFromScript: Matcher = ({ target }, tree) => {
  const top = topMakefile(tree);
  if (!target || !top || makeTargets(tree, top).includes(target)) return undefined;
  const script = [`scripts/${target}.sh`, `scripts/${target}`].find((path) => tree.read(path) !== undefined);
  if (!script) return undefined;
  return {
    edits: [appendLines(top.path, top.text, ['', `.PHONY: ${target}`, `${target}:`, `\tsh ${script}`])],
    summary: `added make target "${target}" to ${top.path}, running ${script}`,
  };
};

const makeTargetTypo: Matcher = ({ target, neededBy }, tree) => {
  const top = topMakefile(tree);
  if (!target || !neededBy || !top) return undefined;
  const names = makeTargets(tree, top);
  const near = !names.includes(target) && names.includes(neededBy) ? nearMiss(target, names) : undefined;
  const found = near && locateRule(tree, top, neededBy);
  if (!near || !found) return undefined;
  // The prerequisite is a word of the rule line (after its colon) or of its continuation lines.
  const word = new RegExp(`(^|\\s)${escape(target)}(?=\\s|$|\\\\)`, 'g');
  const edits = found.rule.text.flatMap((line, index): LineEdit[] => {
    const from = index === 0 ? line.indexOf(':') + 1 : 0;
    const fixed = line.slice(0, from) + line.slice(from).replace(word, `$1${near.candidate}`);
    return fixed === line ? [] : [{ path: found.path, at: found.rule.line + index, remove: [line], insert: [fixed] }];
  });
  return edits.length ? { edits, summary: `fixed the prerequisite "${target}" of "${neededBy}" in ${found.path} → "${near.candidate}"` } : undefined;
};

const makeTargetAlias: Matcher = ({ target }, tree) => {
  const top = topMakefile(tree);
  if (!target || !top) return undefined;
  const names = makeTargets(tree, top);
  const near = names.includes(target) ? undefined : nearMiss(target, names);
  const found = near && locateRule(tree, top, near.candidate);
  if (!near || !found) return undefined;
  return {
    edits: [{ path: found.path, at: found.rule.after, remove: [], insert: ['', `.PHONY: ${target}`, `${target}: ${near.candidate}`] }],
    summary: `added make target "${target}" as an alias of "${near.candidate}", next to it in ${found.path}`,
  };
};

const npmScriptFromMake: Matcher = ({ script }, tree) => {
  const top = topMakefile(tree);
  const pkg = readPackage(tree);
  if (!script || !top || !pkg || Object.hasOwn(pkg.scripts, script)) return undefined;
  const calls = new RegExp(`(^|[\\s;&|(])npm\\s+run(-script)?\\s+${escape(script)}(?=[\\s;&|)]|$)`, 'm');
  const caller = makefilesOf(tree, top).find((path) => calls.test(tree.read(path) ?? ''));
  if (!caller) return undefined;
  const file = [`scripts/${script}.sh`, `scripts/${script}.js`, `scripts/${script}.mjs`, `scripts/${script}.cjs`].find((path) => tree.read(path) !== undefined);
  if (!file) return undefined;
  const command = file.endsWith('.sh') ? `sh ${file}` : `node ${file}`;
  const edit = addPackageScript('package.json', pkg.text, script, command);
  return edit && { edits: [edit], summary: `added npm script "${script}": ${command} (${caller} runs it)` };
};

const npmScriptAlias: Matcher = ({ script }, tree) => {
  const pkg = readPackage(tree);
  if (!script || !pkg || Object.hasOwn(pkg.scripts, script)) return undefined;
  const near = nearMiss(script, Object.keys(pkg.scripts));
  if (!near) return undefined;
  const edit = addPackageScript('package.json', pkg.text, script, `npm run ${near.candidate}`);
  return edit && { edits: [edit], summary: `added npm script "${script}" as an alias of "${near.candidate}"` };
};

/** Paths joined and tidied (`a/b` + `../c` → `a/c`); undefined when they leave the repository. */
function joinPath(dir: string, relative: string): string | undefined {
  const parts: string[] = [];
  for (const part of `${dir}/${relative}`.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) return undefined;
      parts.pop();
    } else parts.push(part);
  }
  return parts.join('/');
}

/** The specifier that reaches `to` from a file in `fromDir` (`./x`, `../y/z`). */
function relativeSpecifier(fromDir: string, to: string): string {
  const from = fromDir === '' ? [] : fromDir.split('/');
  const target = to.split('/');
  let common = 0;
  while (common < from.length && common < target.length - 1 && from[common] === target[common]) common += 1;
  const up = from.length - common;
  const rest = target.slice(common).join('/');
  return up === 0 ? `./${rest}` : `${'../'.repeat(up)}${rest}`;
}

const moduleExtensions = ['.js', '.cjs', '.mjs', '.json'];
const stripExtension = (path: string) =>
  moduleExtensions.reduce((current, extension) => (current.endsWith(extension) ? current.slice(0, -extension.length) : current), path);
const dirOf = (path: string) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '');

/**
 * A relative module path that does not resolve (`Cannot find module './x'` with its require
 * stack, or ERR_MODULE_NOT_FOUND's resolved path and importer) while exactly one file is a near
 * miss of it: the import's specifier is rewritten on the line that has it. CommonJS resolution
 * (extensions, `index.js`) counts as resolving; an ES module needs the exact file.
 */
const modulePathNearMiss: Matcher = ({ specifier, missing, importer }, tree) => {
  if (!importer) return undefined;
  const importerPath = importer.replace(/^file:\/\//, '');
  const importerFile = tree.files.filter((file) => importerPath === file || importerPath.endsWith(`/${file}`)).sort((a, b) => b.length - a.length)[0];
  if (!importerFile) return undefined;
  const dir = dirOf(importerFile);
  const root = importerPath.slice(0, importerPath.length - importerFile.length);
  const esm = !specifier;
  let wanted: string | undefined;
  if (specifier) wanted = specifier.startsWith('./') || specifier.startsWith('../') ? joinPath(dir, specifier) : undefined;
  else if (missing?.replace(/^file:\/\//, '').startsWith(root)) wanted = repoPath(missing.replace(/^file:\/\//, '').slice(root.length));
  if (!wanted) return undefined;
  const resolving = esm
    ? [wanted]
    : [wanted, ...moduleExtensions.map((extension) => `${wanted}${extension}`), ...['index.js', 'index.json'].map((index) => `${wanted}/${index}`)];
  if (resolving.some((path) => tree.files.includes(path))) return undefined;
  const key = stripExtension(wanted);
  const candidates = tree.files.flatMap((file) => {
    if (!moduleExtensions.some((extension) => file.endsWith(extension))) return [];
    const fileKey = stripExtension(file);
    const options = [{ file, key: fileKey, target: file, viaDirectory: false }];
    if (!esm && file.endsWith('/index.js')) options.push({ file, key: dirOf(file), target: dirOf(file), viaDirectory: true });
    return options.flatMap((option) => {
      const distance = option.key === key ? 0 : pathNearness(key, option.key);
      return distance === undefined ? [] : [{ ...option, distance }];
    });
  });
  const best = Math.min(...candidates.map(({ distance }) => distance));
  const nearest = candidates.filter(({ distance }) => distance === best);
  if (nearest.length !== 1) return undefined;
  const chosen = nearest[0]!;
  const text = tree.read(importerFile);
  if (text === undefined) return undefined;
  // The specifiers in the importer that meant the missing path (for an ES module, those resolving to it).
  const literal = /(['"`])(\.{1,2}\/[^'"`\n]*)\1/g;
  const olds = specifier ? [specifier] : [...new Set([...text.matchAll(literal)].map((match) => match[2]!).filter((spec) => joinPath(dir, spec) === wanted))];
  const edits = text.split('\n').flatMap((line, index): LineEdit[] => {
    if (!/\brequire\s*\(|\bimport\b|\bfrom\b|\bexport\b/.test(line)) return [];
    let fixed = line;
    for (const old of olds) {
      const keepsExtension = esm || moduleExtensions.some((extension) => old.endsWith(extension));
      const target = chosen.viaDirectory || keepsExtension ? chosen.target : stripExtension(chosen.target);
      const replacement = relativeSpecifier(dir, target);
      fixed = fixed.replace(new RegExp(`(['"\`])${escape(old)}\\1`, 'g'), `$1${replacement}$1`);
    }
    return fixed === line ? [] : [{ path: importerFile, at: index, remove: [line], insert: [fixed] }];
  });
  return edits.length ? { edits, summary: `fixed the import of "${olds.join('", "')}" in ${importerFile} → ${chosen.file}` } : undefined;
};

/** Each matcher by the `kind` a playbook names. */
export const matchers: Readonly<Record<PlaybookKind, Matcher>> = {
  'make-target-from-script': makeTargetFromScript,
  'make-target-typo': makeTargetTypo,
  'make-target-alias': makeTargetAlias,
  'npm-script-from-make': npmScriptFromMake,
  'npm-script-alias': npmScriptAlias,
  'module-path-near-miss': modulePathNearMiss,
};

/**
 * The first playbook whose signature matches the output and whose matcher's premise holds, with
 * its edits. A patch that is not minimal (too many lines, too many edits) is never returned.
 */
export function matchPlaybook(playbooks: readonly Playbook[], output: string, tree: PlaybookTree): PlaybookPatch | undefined {
  for (const playbook of playbooks) {
    const match = new RegExp(playbook.signature, 'm').exec(output);
    if (!match) continue;
    const patch = matchers[playbook.kind](match.groups ?? {}, tree);
    if (patch && patch.edits.length > 0 && patch.edits.length <= maxEdits && patch.edits.every(isMinimal)) return { playbookId: playbook.id, ...patch };
  }
  return undefined;
}
