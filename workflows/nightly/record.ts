import { log, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { NightlyOutcome, NightlyPhase, NightlyRequest, NightlyStatus, NightlyStatusView } from '../../core/nightly-types';
import { endsAs, type RunFailureCode } from '../../core/failures';
import { nightlyStatusQuery } from '../../core/messages';
import { searchAttributes } from '../../core/search-attributes';
import type { Meters } from '../../core/types';
import { nightlyRunId } from '../../policies/nightly';
import { emptyMeters } from '../landing/tracker';

/** A nightly's record: what the `status` query shows (phase, gates, children) and the outcome is built from. */
export class NightlyRecord {
  readonly started = Date.now();
  readonly runId = nightlyRunId(workflowInfo().workflowId);
  readonly meters = emptyMeters();
  readonly view: NightlyStatusView;
  failingSuites: string[] = [];
  fix: NightlyOutcome['fixLoop'];
  landed: NightlyOutcome['landing'];

  constructor(readonly request: NightlyRequest) {
    this.view = { runId: this.runId, repo: request.repo, target: request.target, phase: 'inspect', gates: [] };
    setHandler(nightlyStatusQuery, () => this.view);
    upsertSearchAttributes([
      { key: searchAttributes.kind, value: 'nightly' },
      { key: searchAttributes.repo, value: request.repo },
      { key: searchAttributes.target, value: request.target },
    ]);
  }

  enter(phase: NightlyPhase): void {
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

  /**
   * Ends the nightly on a failure of the table, with the table's nightly status. The recorded
   * type is `code`, or the cause's own (`failure.type`: a child's failure) when it has one.
   */
  fail(code: RunFailureCode, summary: string, failure: { message: string; type?: string }): NightlyOutcome {
    return this.finish(endsAs('nightly', code), summary, { type: failure.type ?? code, message: failure.message });
  }

  finish(status: NightlyStatus, summary: string, failure?: NightlyOutcome['failure']): NightlyOutcome {
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
