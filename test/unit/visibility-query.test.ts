import assert from 'node:assert/strict';
import { test } from 'node:test';
import { filterValueProblem, runListQuery, type RunFilter } from '../../core/visibility-query';

const queries: { name: string; input: RunFilter; expected: string }[] = [
  { name: 'kind only', input: { kind: 'landing' }, expected: "TarmacKind = 'landing' AND ExecutionStatus != 'ContinuedAsNew'" },
  {
    name: 'repo and target',
    input: { kind: 'landing', repo: '/srv/repos/app', target: 'main' },
    expected: "TarmacKind = 'landing' AND TarmacRepo = '/srv/repos/app' AND TarmacTarget = 'main' AND ExecutionStatus != 'ContinuedAsNew'",
  },
  {
    name: 'every filter, in a fixed order',
    input: { kind: 'landing', status: 'Running', outcome: 'landed', phase: 'gate', branch: 'feature/x', target: 'main', repo: 'file:///r.git' },
    expected:
      "TarmacKind = 'landing' AND TarmacRepo = 'file:///r.git' AND TarmacTarget = 'main' AND TarmacBranch = 'feature/x' AND TarmacPhase = 'gate' AND TarmacOutcome = 'landed' AND ExecutionStatus = 'Running'",
  },
  {
    name: 'any of several kinds',
    input: { kind: ['landing', 'fix-loop'], repo: 'file:///r.git' },
    expected: "TarmacKind IN ('landing', 'fix-loop') AND TarmacRepo = 'file:///r.git' AND ExecutionStatus != 'ContinuedAsNew'",
  },
  {
    name: 'nightly kind',
    input: { kind: 'nightly', outcome: 'green' },
    expected: "TarmacKind = 'nightly' AND TarmacOutcome = 'green' AND ExecutionStatus != 'ContinuedAsNew'",
  },
  {
    name: 'the earlier runs of runs that continued as new, when asked for',
    input: { kind: 'landing', status: 'ContinuedAsNew' },
    expected: "TarmacKind = 'landing' AND ExecutionStatus = 'ContinuedAsNew'",
  },
];
for (const { name, input, expected } of queries) {
  test(`runListQuery: ${name}`, () => assert.equal(runListQuery(input), expected));
}

const values: { name: string; input: string; expected: boolean }[] = [
  { name: 'plain path', input: '/srv/repo', expected: true },
  { name: 'url', input: 'https://example.invalid/a/b.git', expected: true },
  { name: 'single quote (would end the quoted value)', input: "x' OR TarmacKind = 'y", expected: false },
  { name: 'double quote', input: 'a"b', expected: false },
  { name: 'backslash', input: 'a\\b', expected: false },
  { name: 'newline', input: 'a\nb', expected: false },
  { name: 'NUL byte (Temporal fails the query)', input: 'a\u0000b', expected: false },
  { name: 'non-ASCII letters', input: '/srv/dépôt', expected: true },
];
for (const { name, input, expected } of values) {
  test(`filterValueProblem: ${name}`, () => assert.equal(filterValueProblem(input) === undefined, expected));
}
