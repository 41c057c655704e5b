/**
 * Make's own view of a repository's makefiles. `make -p` prints its database — every target of
 * every makefile it read (`include`d ones too, and rules made by `$(eval)`), with the file and
 * line of each recipe — so a target defined in `mk/run.mk` is as visible as one in `Makefile`.
 * This module reads that print-out, finds a rule's lines in a makefile's text, and, when make could
 * not be asked, reads the rules of one makefile as text. Pure.
 */
import type { MakeDatabase, MakeTarget } from '../core/fix-types';

/** The phony goal the fix loop's database run asks make for, so make updates nothing else. */
const databaseGoal = 'tarmac-database';

/**
 * The shell line that prints make's database in the runner container: `-p` prints it, `-q` runs no
 * recipe, `-r` leaves out the built-in rules, and the goal is a phony target of our own, so make
 * updates nothing else. Errors go nowhere (the database is stdout; make's complaints would split it).
 */
export const makeDatabaseScript = `make -pq -r '--eval=.PHONY: ${databaseGoal}' '--eval=${databaseGoal}: ; @:' ${databaseGoal} 2>/dev/null`;

/** Most targets kept of one database (a workflow carries them). */
const maxMakeTargets = 2_000;

/** Special targets (`.PHONY`, `.DEFAULT`, …) and pattern rules are no names a user runs. */
const isUserTarget = (name: string) => name !== databaseGoal && !/^\.[A-Z_]+$/.test(name) && !/[%$]/.test(name) && name.trim() === name && name !== '';

/** After a rule's colon: a target-specific variable (`build: CFLAGS += -O2`), not prerequisites. */
const targetVariable = /^\s*[A-Za-z_][A-Za-z0-9_.-]*\s*(?:\+|\?|!|::?)?=/;

/**
 * Reads `make -p` output: the targets of the "# Files" section (not those make marks "Not a
 * target", nor special targets and patterns) with their recipe's file and line, and the makefiles
 * make read (`MAKEFILE_LIST`). Undefined when the text holds no database (make was not there, or
 * failed before printing one).
 */
export function parseMakeDatabase(text: string): Omit<MakeDatabase, 'source'> | undefined {
  const lines = text.split('\n').map((line) => line.replace(/\r$/, ''));
  const listLine = lines.find((line) => /^MAKEFILE_LIST :?= /.test(line));
  const makefiles = listLine
    ? listLine
        .replace(/^MAKEFILE_LIST :?= /, '')
        .split(/\s+/)
        .filter(Boolean)
    : [];
  const start = lines.indexOf('# Files');
  if (start < 0) return undefined;
  const targets = new Map<string, MakeTarget>();
  let block: string[] = [];
  const flush = () => {
    if (block.length === 0 || block.includes('# Not a target:')) return void (block = []);
    const entry = block.find(
      (line) =>
        !line.startsWith('#') &&
        !line.startsWith('\t') &&
        /^[^:]+::?(\s|$)/.test(line) &&
        !targetVariable.test(line.slice(line.indexOf(':') + 1).replace(/^:/, '')),
    );
    const name = entry?.slice(0, entry.indexOf(':'));
    if (name && isUserTarget(name) && !targets.has(name) && targets.size < maxMakeTargets) {
      const recipe = block.map((line) => /^#\s+recipe to execute \(from '(.+)', line (\d+)\):$/.exec(line)).find(Boolean);
      targets.set(name, recipe ? { name, recipe: { file: recipe[1]!, line: Number(recipe[2]) } } : { name });
    }
    block = [];
  };
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('# files hash-table stats')) break;
    if (line === '') flush();
    else block.push(line);
  }
  flush();
  return { targets: [...targets.values()], makefiles };
}

/** One logical line of a makefile: physical lines joined where a line ends with `\`. */
interface LogicalLine {
  /** Index of its first physical line (0-based) and one past its last. */
  start: number;
  end: number;
  text: string;
}

function logicalLines(lines: readonly string[]): LogicalLine[] {
  const out: LogicalLine[] = [];
  for (let index = 0; index < lines.length;) {
    const start = index;
    let text = lines[index]!.replace(/\r$/, '');
    while (text.endsWith('\\') && index + 1 < lines.length) {
      index += 1;
      text = `${text.slice(0, -1)} ${lines[index]!.replace(/\r$/, '')}`;
    }
    index += 1;
    out.push({ start, end: index, text });
  }
  return out;
}

/** The targets a logical line defines, when it is a rule line (not a recipe, comment, assignment or directive). */
export function ruleTargets(text: string): string[] | undefined {
  if (text.startsWith('\t') || text.trimStart().startsWith('#')) return undefined;
  const match = /^([^:=#]+?)\s*::?(?!=)(.*)$/.exec(text);
  if (!match || targetVariable.test(match[2]!)) return undefined;
  const names = match[1]!.trim().split(/\s+/);
  if (names.some((name) => /^(include|-include|sinclude|define|export|override|ifeq|ifneq|ifdef|ifndef)$/.test(name))) return undefined;
  return names;
}

/** Where a rule sits in a makefile's lines: its rule line, and the index just past its recipe. */
export interface RuleLines {
  /** Index (0-based) of the rule line. */
  line: number;
  /** Index just past the rule's last recipe line: where a rule next to it goes. */
  after: number;
  /** The rule line's physical lines (more than one when it is continued with `\`). */
  text: string[];
}

/**
 * The rule defining `name` in a makefile's text. With the line make gave for its recipe (1-based),
 * the rule line is the nearest rule above it (or that line itself, for `t: ; cmd`) and must name
 * `name`; without, the first rule line naming it. Undefined when the text has no such rule line
 * (a target spelled through variables: make knows it, the text does not say it).
 */
export function findRule(makefile: string, name: string, recipeLine?: number): RuleLines | undefined {
  const lines = makefile.split('\n');
  const logical = logicalLines(lines);
  let index: number;
  if (recipeLine !== undefined) {
    index = logical.findIndex((entry) => entry.start <= recipeLine - 1 && recipeLine - 1 < entry.end);
    while (index >= 0 && ruleTargets(logical[index]!.text) === undefined) index -= 1;
    if (index < 0 || !ruleTargets(logical[index]!.text)!.includes(name)) return undefined;
  } else {
    index = logical.findIndex((entry) => ruleTargets(entry.text)?.includes(name) ?? false);
    if (index < 0) return undefined;
  }
  const rule = logical[index]!;
  let last = index;
  while (last + 1 < logical.length && logical[last + 1]!.text.startsWith('\t')) last += 1;
  return { line: rule.start, after: logical[last]!.end, text: lines.slice(rule.start, rule.end) };
}

/** The targets of one makefile read as text (when make's database could not be had). */
export function textualMakeTargets(makefile: string): string[] {
  const names = logicalLines(makefile.split('\n')).flatMap((entry) => ruleTargets(entry.text) ?? []);
  return [...new Set(names.filter(isUserTarget))];
}
