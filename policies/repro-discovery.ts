/**
 * Grounded repro discovery: which command reproduces the failure a fix request is about. In order:
 *
 * 1. the request's own `reproCommand`;
 * 2. what the request's words contain — an error that names the command (make's "No rule to make
 *    target 'x'", npm's "Missing script: x"), a command written in the text (`make <target>`,
 *    `npm run <script>`, `npm start`, `npm test`, `node <file>`), the entry point of a Node
 *    "Cannot find module" trace (`node <entry>`);
 * 3. what the repository defines for the request's intent — make's database (included makefiles
 *    too), package.json's scripts and entry point.
 *
 * Never a command the repository does not define: a written command counts when its target or
 * script exists, or when the user plainly ran it and its failure is the bug (make's or npm's own
 * error pasted, the command in backticks or after a prompt, "with make up", "make up fails"). So
 * "make sure the server starts" is no command, and a request with nothing grounded gets none.
 * Pure: decides from the request and the facts read of the repository (activities/fix/grounding.ts).
 */
import type { Intent, RepoFacts, ReproSource } from '../core/fix-types';

interface ReproInput {
  request: string;
  reproCommand?: string;
  intent: Intent;
  facts: RepoFacts;
}

/** The repro and why; `command: null` when nothing grounds one (the reason says what was looked for). */
export type ReproChoice = { command: string; source: ReproSource; reason: string } | { command: null; source: null; reason: string };

/** Names a repository's own definitions are looked up by, per intent, most likely first. */
const repositoryNames: Readonly<Record<Exclude<Intent, 'design-question'>, readonly string[]>> = {
  'boot-fix': ['start', 'dev', 'serve', 'up', 'run', 'start-all'],
  'build-fix': ['build', 'compile', 'all'],
  'test-fix': ['test', 'check', 'tests', 'unit'],
  'other-fix': ['test', 'check', 'build'],
};

/** A name of a make target or npm script taken from text: shell-safe, never a flag. */
const name = String.raw`[A-Za-z0-9_][A-Za-z0-9_.:@/-]*`;
const quote = `['\`‘’"“”]`;
const trailing = /[.,:;!?)]+$/;

/** Words around a command that say the user ran it. */
const ranBefore = /(?:^|\s)(?:run|runs|running|ran|with|using|via|type|typing|typed|call|calling|execute|executing|invoke|invoking|try|tried|trying)\s+$/i;
const ranAfter =
  /^\s*(?:fails?|failed|failing|errors?|errored|exits?|exited|crash(?:es|ed)?|breaks|broke|doesn'?t|does not|won'?t|will not|is broken|gives|gave|says|said|prints|printed|returns|returned|hangs)\b/i;

interface Mention {
  at: number;
  end: number;
}

/** Did the user plainly run the command the text holds at this place (backticks, a prompt, or words)? */
function ranByUser(text: string, { at, end }: Mention): boolean {
  const lineStart = text.lastIndexOf('\n', at - 1) + 1;
  const before = text.slice(Math.max(lineStart, at - 40), at);
  if (before.endsWith('`') || /^\s*[$>#]\s*$/.test(text.slice(lineStart, at))) return true;
  return ranBefore.test(before) || ranAfter.test(text.slice(end, end + 40));
}

type Npm = { scripts: Record<string, string>; main?: string };
const npmOf = (facts: RepoFacts): Npm | undefined => (facts.packageJson && 'scripts' in facts.packageJson ? facts.packageJson : undefined);
const makeTargetsOf = (facts: RepoFacts): string[] => (facts.makefile && facts.make ? facts.make.targets.map((target) => target.name) : []);
const makefilesOf = (facts: RepoFacts): string => (facts.make?.makefiles.length ? facts.make.makefiles.join(', ') : (facts.makefile ?? 'the makefile'));
const npmCommand = (script: string) => (script === 'start' || script === 'test' ? `npm ${script}` : `npm run ${script}`);
/** Where make says a target's recipe is, for the reason. */
const definedWhere = (facts: RepoFacts, target: string) => {
  const recipe = facts.make?.targets.find((entry) => entry.name === target)?.recipe;
  return recipe ? `${recipe.file}, line ${recipe.line}` : makefilesOf(facts);
};

/** A tree file an absolute path (or a repo path) in a trace names: the longest tree path it ends with. */
export function treeFileOf(path: string, files: readonly string[]): string | undefined {
  const clean = path.replace(/^file:\/\//, '').replace(/:\d+(?::\d+)?$/, '');
  return files.filter((file) => clean === file || clean.endsWith(`/${file}`)).sort((a, b) => b.length - a.length)[0];
}

type Found = { command: string; reason: string; at: number };

/** Errors that name the failing command: make's missing target, npm's missing script. */
function pastedErrors(text: string, facts: RepoFacts): Found[] {
  const found: Found[] = [];
  const targets = makeTargetsOf(facts);
  if (facts.makefile) {
    for (const match of text.matchAll(new RegExp(`No rule to make target ${quote}(${name})${quote}(?:,\\s*needed by ${quote}(${name})${quote})?`, 'g'))) {
      const [, missing, neededBy] = match;
      const goal = neededBy && targets.includes(neededBy) ? neededBy : missing!;
      const how = goal === missing ? `\`make ${goal}\` is the command that fails` : `\`make ${goal}\` (defined in ${definedWhere(facts, goal)}) reproduces it`;
      found.push({
        command: `make ${goal}`,
        reason: `the request pastes make's error "No rule to make target '${missing}'${neededBy ? `, needed by '${neededBy}'` : ''}": ${how}`,
        at: match.index,
      });
    }
  }
  if (npmOf(facts)) {
    for (const match of text.matchAll(new RegExp(`missing script:\\s*${quote}?(${name})`, 'gi'))) {
      const script = match[1]!.replace(trailing, '');
      found.push({
        command: npmCommand(script),
        reason: `the request pastes npm's error "Missing script: ${script}": \`${npmCommand(script)}\` is the command that fails`,
        at: match.index,
      });
    }
  }
  return found;
}

/** Commands written in the text: each counts when the repository defines it, or when the user plainly ran it. */
function writtenCommands(text: string, facts: RepoFacts, ignored: string[]): Found[] {
  const found: Found[] = [];
  const targets = makeTargetsOf(facts);
  const npm = npmOf(facts);
  const consider = (match: RegExpMatchArray, command: string, defined: string | undefined, present: boolean, what: string) => {
    const mention = { at: match.index!, end: match.index! + match[0].length };
    if (!present) return void ignored.push(`\`${command}\` (${what})`);
    if (defined) return void found.push({ command, reason: `the request names \`${command}\`, which ${defined}`, at: mention.at });
    if (ranByUser(text, mention))
      return void found.push({ command, reason: `the request names \`${command}\` as the command it ran, whose failure is the bug (${what})`, at: mention.at });
    ignored.push(`\`${command}\` (${what}, and the request does not say it ran it)`);
  };
  for (const match of text.matchAll(new RegExp(`\\bmake[ \\t]+(${name})`, 'g'))) {
    // make's own "No rule to make target 'x'" is an error (above), not a command.
    if (/rule to\s*$/i.test(text.slice(Math.max(0, match.index - 12), match.index))) continue;
    const target = match[1]!.replace(trailing, '');
    const where = targets.includes(target) ? `${definedWhere(facts, target)} defines as a make target` : undefined;
    consider(match, `make ${target}`, where, Boolean(facts.makefile), facts.makefile ? `no makefile defines "${target}"` : 'the repository has no makefile');
  }
  for (const match of text.matchAll(new RegExp(`\\bnpm[ \\t]+(?:run|run-script)[ \\t]+(${name})|\\bnpm[ \\t]+(start|test)\\b`, 'g'))) {
    const script = (match[1] ?? match[2]!).replace(trailing, '');
    const serverDefault = script === 'start' && !npm?.scripts.start && facts.files.includes('server.js');
    const where =
      npm?.scripts[script] !== undefined
        ? `package.json defines (scripts.${script})`
        : serverDefault
          ? 'npm runs as `node server.js`, a file the repository has'
          : undefined;
    consider(match, npmCommand(script), where, Boolean(npm), npm ? `package.json has no script "${script}"` : 'the repository has no readable package.json');
  }
  for (const match of text.matchAll(/\bnode[ \t]+((?:\.\/)?[A-Za-z0-9_][A-Za-z0-9_./-]*\.[cm]?js)\b/g)) {
    const file = match[1]!.replace(/^\.\//, '');
    if (facts.files.includes(file))
      found.push({ command: `node ${file}`, reason: `the request names \`node ${file}\`; ${file} is in the repository`, at: match.index });
    else ignored.push(`\`node ${file}\` (no such file)`);
  }
  return found;
}

/** The entry point of a Node "Cannot find module" trace: the bottom of its require stack, or the importing file. */
function traceEntries(text: string, facts: RepoFacts): Found[] {
  const found: Found[] = [];
  for (const match of text.matchAll(/Require stack:[ \t]*\r?\n((?:[ \t]*-[ \t]+[^\n]+\r?\n?)+)/g)) {
    const stack = match[1]!
      .split('\n')
      .map((line) => line.replace(/^[ \t]*-[ \t]+/, '').trim())
      .filter(Boolean);
    const entry = treeFileOf(stack.at(-1)!, facts.files);
    if (entry)
      found.push({
        command: `node ${entry}`,
        reason: `the request pastes a "Cannot find module" trace whose entry point is ${entry}: \`node ${entry}\` reproduces it`,
        at: match.index,
      });
  }
  for (const match of text.matchAll(/Cannot find (?:module|package) '[^'\n]+' imported from (\S+)/g)) {
    const entry = treeFileOf(match[1]!, facts.files);
    if (entry)
      found.push({
        command: `node ${entry}`,
        reason: `the request pastes a "Cannot find module" error raised importing from ${entry}: \`node ${entry}\` reproduces it`,
        at: match.index,
      });
  }
  return found;
}

/** What the repository itself defines for the intent: make targets, npm scripts, npm's entry point. */
function repositoryDefined(input: ReproInput): { command: string; reason: string } | undefined {
  const { intent, facts, request } = input;
  if (intent === 'design-question') return undefined;
  const names = repositoryNames[intent];
  const targets = makeTargetsOf(facts);
  const npm = npmOf(facts);
  const candidates = names.flatMap((wanted) => [
    ...(targets.includes(wanted)
      ? [
          {
            wanted,
            command: `make ${wanted}`,
            reason: `make's database (${makefilesOf(facts)}) defines target "${wanted}" (recipe in ${definedWhere(facts, wanted)})`,
          },
        ]
      : []),
    ...(npm?.scripts[wanted] !== undefined
      ? [{ wanted, command: npmCommand(wanted), reason: `package.json defines scripts.${wanted} (\`${npm.scripts[wanted]}\`)` }]
      : []),
  ]);
  const mentioned = candidates.find(({ wanted }) => new RegExp(`\\b${wanted}\\b`, 'i').test(request));
  const chosen = mentioned ?? candidates[0];
  if (chosen)
    return { command: chosen.command, reason: `${chosen.reason}; a ${intent} runs it${mentioned ? ` (the request speaks of "${chosen.wanted}")` : ''}` };
  if (intent !== 'boot-fix' || !npm) return undefined;
  if (facts.files.includes('server.js'))
    return {
      command: 'npm start',
      reason: 'package.json has no start script, so `npm start` runs `node server.js`, which the repository has; a boot-fix starts the app with it',
    };
  const main = (npm.main ?? 'index.js').replace(/^\.\//, '');
  if (facts.files.includes(main))
    return {
      command: `node ${main}`,
      reason: `package.json's entry point is ${main}${npm.main ? '' : ' (npm\'s default "main")'}; a boot-fix starts the app with \`node ${main}\``,
    };
  return undefined;
}

/** What the repository offers, for the reason when nothing grounds a repro. */
function inventory(facts: RepoFacts): string {
  const make = facts.makefile ? `${makefilesOf(facts)} — targets: ${makeTargetsOf(facts).slice(0, 12).join(', ') || 'none'}` : 'no makefile';
  const npm = npmOf(facts);
  const pkg =
    facts.packageJson === null
      ? 'no package.json'
      : npm
        ? `package.json — scripts: ${Object.keys(npm.scripts).slice(0, 12).join(', ') || 'none'}`
        : `package.json unreadable (${(facts.packageJson as { error: string }).error})`;
  return `${make}; ${pkg}`;
}

export function discoverRepro(input: ReproInput): ReproChoice {
  if (input.reproCommand) return { command: input.reproCommand, source: 'explicit', reason: 'given by the request (reproCommand)' };
  const ignored: string[] = [];
  const text = input.request;
  // The request's words, strongest evidence first; within a tier, the first in the text.
  for (const tier of [pastedErrors(text, input.facts), writtenCommands(text, input.facts, ignored), traceEntries(text, input.facts)]) {
    const first = [...tier].sort((a, b) => a.at - b.at)[0];
    if (first) return { command: first.command, source: 'request', reason: first.reason };
  }
  const defined = repositoryDefined(input);
  if (defined)
    return {
      command: defined.command,
      source: 'repository',
      reason: `the request names no command; ${defined.reason}${ignored.length ? ` (not taken from the request: ${ignored.join(', ')})` : ''}`,
    };
  const looked = input.intent === 'design-question' ? '' : ` for a ${input.intent} (looked for ${repositoryNames[input.intent].join(', ')})`;
  return {
    command: null,
    source: null,
    reason: `no grounded repro: the request pastes no error and names no command the repository defines, and the repository defines none${looked}; read ${inventory(input.facts)}${ignored.length ? `; not taken from the request: ${ignored.join(', ')}` : ''}`,
  };
}
