import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gateVerdict, type GateRecord } from '../../policies/supersedes';

const result = (suiteId: string, treeSha: string, round: number, status: GateRecord['status']): GateRecord => ({
  suiteId,
  treeSha,
  round,
  status,
  exitCode: status === 'passed' ? 0 : 1,
  logRef: `logs/${suiteId}-${round}.log`,
  durationMs: 1,
  reattached: false,
});

const table: { name: string; records: GateRecord[]; suites: string[]; tree: string; expected: { green: boolean; failing: string[]; lineage: number } }[] = [
  {
    name: 'all green on the tree',
    records: [result('test', 'T1', 1, 'passed')],
    suites: ['test'],
    tree: 'T1',
    expected: { green: true, failing: [], lineage: 0 },
  },
  {
    name: 'red on the tree',
    records: [result('test', 'T1', 1, 'failed')],
    suites: ['test'],
    tree: 'T1',
    expected: { green: false, failing: ['test'], lineage: 0 },
  },
  {
    name: 'a later green on the fixed tree supersedes the red',
    records: [result('test', 'T1', 1, 'failed'), result('test', 'T2', 2, 'passed')],
    suites: ['test'],
    tree: 'T2',
    expected: { green: true, failing: [], lineage: 1 },
  },
  {
    name: 'green on another tree does not count',
    records: [result('test', 'T1', 1, 'passed')],
    suites: ['test'],
    tree: 'T2',
    expected: { green: false, failing: ['test'], lineage: 0 },
  },
  {
    name: 'a missing suite is failing',
    records: [result('test', 'T1', 1, 'passed')],
    suites: ['test', 'lint'],
    tree: 'T1',
    expected: { green: false, failing: ['lint'], lineage: 0 },
  },
  {
    name: 'a later red is not superseded by an earlier green',
    records: [result('test', 'T1', 1, 'passed'), result('test', 'T1', 2, 'failed')],
    suites: ['test'],
    tree: 'T1',
    expected: { green: false, failing: ['test'], lineage: 0 },
  },
  {
    name: 'timed-out counts as red and is superseded too',
    records: [result('test', 'T1', 1, 'timed-out'), result('test', 'T1', 2, 'passed')],
    suites: ['test'],
    tree: 'T1',
    expected: { green: true, failing: [], lineage: 1 },
  },
];

describe('gateVerdict (supersedes)', () => {
  for (const { name, records, suites, tree, expected } of table) {
    it(name, () => {
      const verdict = gateVerdict(records, suites, tree);
      assert.equal(verdict.green, expected.green);
      assert.deepEqual(verdict.failing, expected.failing);
      assert.equal(verdict.lineage.length, expected.lineage);
    });
  }
  const excused = (record: GateRecord, by: NonNullable<GateRecord['excused']>['by']): GateRecord => ({ ...record, excused: { by } });
  const excusedTable: {
    name: string;
    records: GateRecord[];
    tree: string;
    expected: { green: boolean; failing: string[]; excused: string[]; lineage: number };
  }[] = [
    {
      name: 'a red excused as flaky counts toward green and is named',
      records: [excused(result('test', 'T1', 1, 'failed'), 'retry')],
      tree: 'T1',
      expected: { green: true, failing: [], excused: ['test:retry'], lineage: 0 },
    },
    {
      name: 'a timed-out red excused by a quarantine counts too',
      records: [excused(result('test', 'T1', 1, 'timed-out'), 'quarantine')],
      tree: 'T1',
      expected: { green: true, failing: [], excused: ['test:quarantine'], lineage: 0 },
    },
    {
      name: 'an excused red on another tree does not count',
      records: [excused(result('test', 'T1', 1, 'failed'), 'pre-existing')],
      tree: 'T2',
      expected: { green: false, failing: ['test'], excused: [], lineage: 0 },
    },
    {
      name: 'a later red the evidence did not excuse fails, whatever was excused before',
      records: [excused(result('test', 'T1', 1, 'failed'), 'retry'), result('test', 'T1', 2, 'failed')],
      tree: 'T1',
      expected: { green: false, failing: ['test'], excused: [], lineage: 0 },
    },
    {
      name: 'an excused red retires nothing: the earlier red stays without lineage',
      records: [result('test', 'T0', 1, 'failed'), excused(result('test', 'T1', 2, 'failed'), 'retry')],
      tree: 'T1',
      expected: { green: true, failing: [], excused: ['test:retry'], lineage: 0 },
    },
  ];
  for (const { name, records, tree, expected } of excusedTable) {
    it(name, () => {
      const verdict = gateVerdict(records, ['test'], tree);
      assert.deepEqual(
        {
          green: verdict.green,
          failing: verdict.failing,
          excused: verdict.excused.map((entry) => `${entry.suiteId}:${entry.by}`),
          lineage: verdict.lineage.length,
        },
        expected,
      );
    });
  }
  it('the lineage names the red and what superseded it', () => {
    const verdict = gateVerdict([result('test', 'T1', 1, 'failed'), result('test', 'T2', 2, 'passed')], ['test'], 'T2');
    assert.deepEqual(verdict.lineage[0], { suiteId: 'test', red: { treeSha: 'T1', round: 1, status: 'failed' }, supersededBy: { treeSha: 'T2', round: 2 } });
  });
});
