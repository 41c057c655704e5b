/**
 * Validation of the cron expressions Tarmac accepts for schedules, so the API can
 * refuse a bad one (naming the field of the expression) before Temporal is called.
 * Pure. Accepted: five fields `minute hour day-of-month month day-of-week`, each a
 * comma list of `*`, `N`, `N-M`, optionally `/step`; month and weekday names
 * (JAN–DEC, SUN–SAT); weekday 0–7 (0 and 7 are Sunday); and the macros @yearly,
 * @annually, @monthly, @weekly, @daily, @midnight, @hourly. Temporal's own extra
 * forms (seconds, years, `@every`, `CRON_TZ=`) are refused: the time zone is a
 * field of its own, and five fields are what people read.
 */

const macros = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'];

const fields = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] },
  { name: 'day-of-week', min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
] as const;

type Field = (typeof fields)[number];

function value(text: string, field: Field): number | string {
  if (/^[0-9]{1,2}$/.test(text)) {
    const number = Number(text);
    return number < field.min || number > field.max ? `value ${text} is out of range ${field.min}-${field.max}` : number;
  }
  const names: readonly string[] = 'names' in field ? field.names : [];
  const index = names.indexOf(text.toUpperCase());
  if (index >= 0) return field.name === 'month' ? index + 1 : index;
  return names.length
    ? `"${text}" is not a number ${field.min}-${field.max} or a name (${names[0]}…${names[names.length - 1]})`
    : `"${text}" is not a number ${field.min}-${field.max}`;
}

function itemProblem(item: string, field: Field): string | undefined {
  const [range, step, extra] = item.split('/');
  if (extra !== undefined || range === undefined || range === '') return `"${item}" is not *, N, N-M or one of them with /step`;
  if (step !== undefined && !/^[1-9][0-9]{0,1}$/.test(step)) return `step "${step}" in "${item}" must be a number 1-99`;
  if (range === '*') return undefined;
  const [low, high, more] = range.split('-');
  if (more !== undefined || low === undefined || low === '' || high === '') return `"${item}" is not *, N, N-M or one of them with /step`;
  const from = value(low, field);
  if (typeof from === 'string') return from;
  if (high === undefined) return undefined;
  const to = value(high, field);
  if (typeof to === 'string') return to;
  return from > to ? `range ${range} runs backwards` : undefined;
}

/** Why a cron expression is not accepted, or undefined when it is. */
export function cronProblem(expression: string): string | undefined {
  const text = expression.trim();
  if (text === '') return 'must not be empty';
  if (text.startsWith('@')) return macros.includes(text.toLowerCase()) ? undefined : `"${text}" is not one of ${macros.join(', ')}`;
  const parts = text.split(/\s+/);
  if (parts.length !== fields.length) return `must have 5 fields (minute hour day-of-month month day-of-week), not ${parts.length}`;
  for (const [index, part] of parts.entries()) {
    const field = fields[index]!;
    for (const item of part.split(',')) {
      const problem = itemProblem(item, field);
      if (problem) return `field ${index + 1} (${field.name}): ${problem}`;
    }
  }
  return undefined;
}

/** Why a time zone name is not known to this process's time zone database, or undefined. */
export function timezoneProblem(timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return undefined;
  } catch {
    return `"${timezone}" is not a known IANA time zone (e.g. UTC, Europe/Berlin, America/New_York)`;
  }
}
