import type { GateSuiteResult } from '../core/types';

export interface GateRecord extends GateSuiteResult {
  round: number;
}

export interface SupersedesLink {
  suiteId: string;
  red: { treeSha: string; round: number; status: GateSuiteResult['status'] };
  supersededBy: { treeSha: string; round: number };
}

export interface GateVerdict {
  /** Every declared suite passed on `treeSha`. */
  green: boolean;
  /** Suites with no passing result on `treeSha` (missing or red). */
  failing: string[];
  /** Earlier red results retired by a later green of the same suite; both stay in the record. */
  lineage: SupersedesLink[];
  /** Suites whose latest result on `treeSha` is red but excused (policies/flake.ts: flaky, pre-existing, quarantined): they count toward green. */
  excused: { suiteId: string; by: NonNullable<GateSuiteResult['excused']>['by'] }[];
}

/**
 * Supersedes: a later green result of a suite retires an earlier red one (on an
 * earlier tree or an earlier round). Only results on the tree under decision count
 * toward green; a red the evidence excused (policies/flake.ts) counts toward green
 * too, named in `excused`, and retires nothing. Pure; the record keeps every result.
 */
export function gateVerdict(records: readonly GateRecord[], suiteIds: readonly string[], treeSha: string): GateVerdict {
  const failing: string[] = [];
  const lineage: SupersedesLink[] = [];
  const excused: GateVerdict['excused'] = [];
  for (const suiteId of suiteIds) {
    const ofSuite = records.filter((record) => record.suiteId === suiteId).sort((a, b) => a.round - b.round);
    const latestOnTree = [...ofSuite].reverse().find((record) => record.treeSha === treeSha);
    if (latestOnTree && latestOnTree.status !== 'passed' && latestOnTree.excused) {
      excused.push({ suiteId, by: latestOnTree.excused.by });
      continue;
    }
    if (!latestOnTree || latestOnTree.status !== 'passed') {
      failing.push(suiteId);
      continue;
    }
    for (const record of ofSuite) {
      if (record.status !== 'passed' && record.round < latestOnTree.round) {
        lineage.push({
          suiteId,
          red: { treeSha: record.treeSha, round: record.round, status: record.status },
          supersededBy: { treeSha: latestOnTree.treeSha, round: latestOnTree.round },
        });
      }
    }
  }
  return { green: failing.length === 0, failing, lineage, excused };
}
