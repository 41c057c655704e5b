import { log, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { NightlyOutcome, NightlyPhase, NightlyRequest, NightlyStatus, NightlyStatusView } from '../../core/nightly-types';
import { nightlyStatusQuery } from '../../core/messages';
import { searchAttributes } from '../../core/search-attributes';
import type { Meters } from '../../core/types';
import { nightlyRunId } from '../../policies/nightly';
import { emptyMeters } from '../run-record';
import { RunRecord, type RunFailure } from '../run-record';

/** A nightly's record: what the `status` query shows (phase, gates, children) and the outcome is built from. */
export class NightlyRecord extends RunRecord<'nightly', NightlyPhase, NightlyOutcome> {
  readonly started = Date.now();
  readonly runId = nightlyRunId(workflowInfo().workflowId);
  readonly meters = emptyMeters();
  readonly view: NightlyStatusView;
  failingSuites: string[] = [];
  fix: NightlyOutcome['fixLoop'];
  landed: NightlyOutcome['landing'];

  constructor(readonly request: NightlyRequest) {
    super('nightly', 'inspect');
    this.view = { runId: this.runId, repo: request.repo, target: request.target, phase: 'inspect', gates: [] };
    setHandler(nightlyStatusQuery, () => this.view);
    upsertSearchAttributes([
      { key: searchAttributes.kind, value: 'nightly' },
      { key: searchAttributes.repo, value: request.repo },
      { key: searchAttributes.target, value: request.target },
    ]);
  }

  protected override entered(phase: NightlyPhase): void {
    this.view.phase = phase;
    upsertSearchAttributes([{ key: searchAttributes.phase, value: phase }]);
    // In the worker's log as the run enters it (never on replay), like a landing's phases.
    log.info(`nightly entered phase ${phase}`);
  }

  /** Adds a child's spend (fix loop, landing) to the nightly's meters. */
  addSpend(spent: Pick<Meters, 'agentSessions' | 'inputTokens' | 'outputTokens' | 'costUsd'>): void {
    this.meters.agentSessions += spent.agentSessions;
    this.meters.inputTokens += spent.inputTokens;
    this.meters.outputTokens += spent.outputTokens;
    this.meters.costUsd += spent.costUsd;
  }

  finish(status: NightlyStatus, summary: string, failure?: RunFailure): NightlyOutcome {
    const { view, request } = this;
    return {
      status,
      summary,
      runId: this.runId,
      repo: request.repo,
      target: request.target,
      endedInPhase: view.phase,
      ...(view.targetSha ? { targetSha: view.targetSha, treeSha: view.treeSha } : {}),
      gates: [...view.gates],
      failingSuites: this.failingSuites,
      ...(this.fix ? { fixLoop: this.fix } : {}),
      ...(view.repairBranch ? { repairBranch: view.repairBranch } : {}),
      ...(this.landed ? { landing: this.landed } : {}),
      ...(failure ? { failure } : {}),
      meters: { ...this.meters, wallTimeMs: Date.now() - this.started },
    };
  }
}
