/** The bench's command line: `[count] [ratio|throughput|history …] [--only a,b] [--landings n]`. */
export const sections = ['ratio', 'throughput', 'history'] as const;
export type Section = (typeof sections)[number];

export interface Options {
  count: number;
  landings: number;
  only: Set<Section>;
}

function isSection(word: string): word is Section {
  return (sections as readonly string[]).includes(word);
}

function wholeNumber(flag: string, value: string | undefined): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new Error(`bench: ${flag} must be a whole number ≥ 1, got "${value ?? ''}"`);
  return number;
}

export function parseArguments(argv: string[]): Options {
  const options: Options = { count: 5, landings: 20, only: new Set() };
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index]!;
    if (argument === '--landings') options.landings = wholeNumber('--landings', argv[(index += 1)]);
    else if (argument === '--only') {
      for (const word of (argv[(index += 1)] ?? '').split(',')) {
        if (!isSection(word)) throw new Error(`bench: --only takes ${sections.join(', ')} (comma-separated), got "${word}"`);
        options.only.add(word);
      }
    } else if (isSection(argument)) options.only.add(argument);
    else if (/^\d+$/.test(argument)) options.count = wholeNumber('count', argument);
    else throw new Error(`bench: unknown argument "${argument}"; usage: npm run bench [count] [${sections.join('|')} …] [-- --landings n]`);
  }
  if (options.only.size === 0) for (const section of sections) options.only.add(section);
  return options;
}
