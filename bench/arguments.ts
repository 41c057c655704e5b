/**
 * The bench's command line:
 * `[count] [ratio|throughput|history|queue|environment …] [--only a,b] [--landings n] [--batch-size n] [--repeats n]`.
 */
export const sections = ['ratio', 'throughput', 'history', 'queue', 'environment'] as const;
export type Section = (typeof sections)[number];

/** Landings at once when `--landings` is not given: the throughput's and the queue's own. */
export const defaultLandings: Record<'throughput' | 'queue', number> = { throughput: 20, queue: 8 };

export interface Options {
  /** The ratio's runs. */
  count: number;
  /** Landings at once (throughput, queue); undefined: each section's default (`defaultLandings`). */
  landings?: number;
  /** The queue's batched variant (2..16, what a gate file may ask for); it is measured against batch size 1. */
  batchSize: number;
  /** How many times the queue measures both variants. */
  repeats: number;
  only: Set<Section>;
}

function isSection(word: string): word is Section {
  return (sections as readonly string[]).includes(word);
}

function wholeNumber(flag: string, value: string | undefined, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  const number = Number(value);
  if (value === undefined || value.trim() === '' || !Number.isInteger(number) || number < min || number > max) {
    throw new Error(`bench: ${flag} must be a whole number ${max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`}, got "${value ?? ''}"`);
  }
  return number;
}

export function parseArguments(argv: string[]): Options {
  const options: Options = { count: 5, batchSize: 4, repeats: 2, only: new Set() };
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index]!;
    if (argument === '--landings') options.landings = wholeNumber('--landings', argv[(index += 1)]);
    else if (argument === '--batch-size') options.batchSize = wholeNumber('--batch-size', argv[(index += 1)], 2, 16);
    else if (argument === '--repeats') options.repeats = wholeNumber('--repeats', argv[(index += 1)]);
    else if (argument === '--only') {
      for (const word of (argv[(index += 1)] ?? '').split(',')) {
        if (!isSection(word)) throw new Error(`bench: --only takes ${sections.join(', ')} (comma-separated), got "${word}"`);
        options.only.add(word);
      }
    } else if (isSection(argument)) options.only.add(argument);
    else if (/^\d+$/.test(argument)) options.count = wholeNumber('count', argument);
    else
      throw new Error(
        `bench: unknown argument "${argument}"; usage: npm run bench [count] [${sections.join('|')} …] [-- --landings n --batch-size n --repeats n]`,
      );
  }
  if (options.only.size === 0) for (const section of sections) options.only.add(section);
  return options;
}
