import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cronProblem, timezoneProblem } from '../../core/cron';

describe('cronProblem', () => {
  const accepted = [
    '0 3 * * *',
    '*/15 * * * *',
    '0 9-17 * * MON-FRI',
    '30 2 1,15 * *',
    '0 0 * JAN,jul 0',
    '0 3 * * 7',
    '5/20 * * * *',
    '0 0-23/2 * * *',
    '@daily',
    '@hourly',
    '@weekly',
  ];
  for (const expression of accepted) it(`accepts "${expression}"`, () => assert.equal(cronProblem(expression), undefined));

  const refused = [
    { name: 'empty', input: '  ', expected: /must not be empty/ },
    { name: 'too few fields', input: '0 3 * *', expected: /must have 5 fields .*not 4/ },
    { name: 'seconds and years', input: '0 0 3 * * * 2030', expected: /must have 5 fields/ },
    { name: 'hour out of range', input: '0 25 * * *', expected: /^field 2 \(hour\): value 25 is out of range 0-23$/ },
    { name: 'minute out of range', input: '60 3 * * *', expected: /^field 1 \(minute\): value 60/ },
    { name: 'day of month 0', input: '0 3 0 * *', expected: /^field 3 \(day-of-month\): value 0 is out of range 1-31/ },
    { name: 'unknown month name', input: '0 3 * FOO *', expected: /^field 4 \(month\): "FOO" is not a number 1-12 or a name \(JAN…DEC\)/ },
    { name: 'weekday 8', input: '0 3 * * 8', expected: /^field 5 \(day-of-week\): value 8 is out of range 0-7/ },
    { name: 'backwards range', input: '0 17-9 * * *', expected: /^field 2 \(hour\): range 17-9 runs backwards/ },
    { name: 'zero step', input: '*/0 * * * *', expected: /^field 1 \(minute\): step "0"/ },
    { name: 'garbage', input: 'every night', expected: /must have 5 fields/ },
    { name: 'an unknown macro', input: '@nightly', expected: /"@nightly" is not one of @yearly/ },
    { name: "Temporal's @every", input: '@every 1h', expected: /is not one of/ },
    { name: 'an empty list item', input: '0 3,,4 * * *', expected: /^field 2 \(hour\): "" is not/ },
  ];
  for (const { name, input, expected } of refused) it(`refuses ${name}`, () => assert.match(cronProblem(input) ?? 'accepted', expected));
});

describe('timezoneProblem', () => {
  const table = [
    { input: 'UTC', expected: undefined },
    { input: 'Europe/Berlin', expected: undefined },
    { input: 'America/New_York', expected: undefined },
    { input: 'Mars/Olympus_Mons', expected: '"Mars/Olympus_Mons" is not a known IANA time zone (e.g. UTC, Europe/Berlin, America/New_York)' },
  ];
  for (const { input, expected } of table) it(input, () => assert.equal(timezoneProblem(input), expected));
});
