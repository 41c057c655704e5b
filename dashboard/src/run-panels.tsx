/** The run page's panels of a finished part: a review panel, a landing's merge-queue lineage, a batch, any other run's record. */
import type { LandingOutcomeView as LandingOutcome, Review as ReviewRecord, RunView } from '../../api/schemas';
import type { BatchOutcome } from '../../core/batch-types';
import { batchLineage, batchMembers, type Marker } from './model';
import { Markers, Section, short } from './run-parts';

export function ReviewPanel({ review, index }: { review: ReviewRecord; index: number }) {
  const cacheMarker: Marker[] = review.cache === 'hit' ? ['cached'] : review.cache === 'partial' ? ['partly-cached'] : [];
  return (
    <article class="review" data-review={index + 1} data-cache={review.cache} aria-labelledby={`review-${index}`}>
      <h3 id={`review-${index}`}>
        Panel {index + 1}: {review.status} <Markers markers={cacheMarker} />
      </h3>
      <p>
        REVIEW_CACHE=<strong data-field="cache">{review.cache}</strong> on tree <code>{short(review.treeSha)}</code>; {review.sessionsStarted} reviewer
        session(s) started
        {review.restored.length ? `; restored from the cache: ${review.restored.join(', ')}` : ''}. {review.summary}
      </p>
      <table>
        <thead>
          <tr>
            <th scope="col">Reviewer</th>
            <th scope="col">Verdict from</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Respawns</th>
            <th scope="col">Why no verdict</th>
          </tr>
        </thead>
        <tbody>
          {review.reviewers.map((reviewer) => (
            <tr data-reviewer={reviewer.harnessModel} data-source={reviewer.source}>
              <th scope="row">{reviewer.harnessModel}</th>
              <td>{reviewer.source === 'cache' ? <Markers markers={['cached']} /> : 'session'}</td>
              <td>{reviewer.status}</td>
              <td>{reviewer.attempts ?? ''}</td>
              <td>
                {reviewer.respawns ? <Markers markers={['respawned']} /> : ''} {reviewer.respawns ?? ''}
              </td>
              <td>{reviewer.reason ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {review.blocking.length > 0 ? (
        <ul aria-label="Blocking findings">
          {review.blocking.map((finding) => (
            <li>
              <code>
                {finding.file}
                {finding.line ? `:${finding.line}` : ''}
              </code>{' '}
              [{finding.severity}] {finding.message} ({finding.votes.join(', ')})
            </li>
          ))}
        </ul>
      ) : null}
    </article>
  );
}

/** The merge queue's lineage of a landing: the speculative batch it merged in (members, round, tree), the batches that named it the culprit. */
export function BatchLineageSection({ id, outcome }: { id: string; outcome: LandingOutcome | undefined }) {
  const lineage = batchLineage(outcome, id);
  if (!lineage) return null;
  return (
    <Section id="batch" title="Merge queue">
      {lineage.batch ? (
        <div data-batch={lineage.batch.id} data-round={lineage.batch.round}>
          <p>
            <Markers markers={['batched']} /> Merged in the speculative batch <a href={`#/runs/${lineage.batch.id}`}>{lineage.batch.id}</a>: gate round{' '}
            {lineage.batch.round} passed on tree <code>{short(lineage.batch.treeSha)}</code>, and the target fast-forwarded to it (this landing's commit on the
            stack: <code>{short(lineage.batch.stackedSha)}</code>).
          </p>
          <p id="batch-members-title">Landed in the same fast-forward:</p>
          <ul aria-labelledby="batch-members-title" class="members">
            {lineage.batch.members.map((member) => (
              <li data-member={member.id}>{member.self ? <strong>{member.id} (this landing)</strong> : <a href={`#/runs/${member.id}`}>{member.id}</a>}</li>
            ))}
          </ul>
        </div>
      ) : null}
      {lineage.culprits.length > 0 ? (
        <ul aria-label="Batches that named this landing the culprit">
          {lineage.culprits.map((culprit) => (
            <li data-culprit-in={culprit.batchId} data-round={culprit.round}>
              <Markers markers={['culprit']} /> Named the culprit of batch <a href={`#/runs/${culprit.batchId}`}>{culprit.batchId}</a>: round {culprit.round},
              the stack up to this landing, was red on tree <code>{short(culprit.treeSha)}</code> ({culprit.failing.join(', ') || 'no suite named'}); it got a
              fixup round and came back to the queue at its place.
            </li>
          ))}
        </ul>
      ) : null}
    </Section>
  );
}

/** A merge batch's page: what it decided for each member, its gate rounds (the bisection) and the fast-forwards it made. */
function BatchRun({ outcome }: { outcome: BatchOutcome }) {
  return (
    <>
      <table class="batch-members" data-testid="batch-members">
        <caption>Members, in queue order</caption>
        <thead>
          <tr>
            <th scope="col">Landing</th>
            <th scope="col">Result</th>
            <th scope="col">What the batch decided</th>
          </tr>
        </thead>
        <tbody>
          {batchMembers(outcome).map((member) => (
            <tr data-member={member.landingId} data-result={member.result}>
              <th scope="row">
                <a href={`#/runs/${member.landingId}`}>{member.landingId}</a>
              </th>
              <td>{member.result === 'culprit' ? <Markers markers={['culprit']} /> : member.result}</td>
              <td>{member.detail}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <table class="batch-rounds">
        <caption>Gate rounds (each on a prefix of the stack)</caption>
        <thead>
          <tr>
            <th scope="col">Round</th>
            <th scope="col">Prefix</th>
            <th scope="col">Tree</th>
            <th scope="col">Result</th>
          </tr>
        </thead>
        <tbody>
          {outcome.rounds.map((round) => (
            <tr data-batch-round={round.round} data-green={String(round.green)}>
              <th scope="row">{round.round}</th>
              <td>first {round.prefix}</td>
              <td>
                <code>{short(round.treeSha)}</code>
              </td>
              <td>
                {round.green
                  ? 'green'
                  : `red: ${round.gates
                      .filter((gate) => gate.status !== 'passed')
                      .map((gate) => `${gate.suiteId} ${gate.status}`)
                      .join(', ')}`}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ul aria-label="Fast-forwards of the target">
        {outcome.merges.map((merge) => (
          <li data-merge={merge.to}>
            {outcome.target} <code>{short(merge.from)}</code> → <code>{short(merge.to)}</code> after round {merge.round}: {merge.members.join(', ')}
          </li>
        ))}
      </ul>
    </>
  );
}

/** A run that is not a landing (a panel, a fix loop, a nightly): its main facts, and the whole record. */
export function OtherRun({ run }: { run: RunView }) {
  const record = (run.result ?? run.status ?? {}) as Record<string, unknown>;
  const facts = ['status', 'outcome', 'summary', 'cache', 'playbookUsed', 'phase', 'state'].filter(
    (key) => record[key] !== undefined && typeof record[key] !== 'object',
  );
  return (
    <>
      <dl class="facts">
        {facts.map((key) => (
          <>
            <dt>{key}</dt>
            <dd data-field={key}>{String(record[key])}</dd>
          </>
        ))}
      </dl>
      {run.type === 'mergeBatch' && run.result ? <BatchRun outcome={run.result as BatchOutcome} /> : null}
      {Array.isArray(record.reviewers) ? (
        <ReviewPanel
          review={{
            ...(record as unknown as ReviewRecord),
            blocking: (record.blocking as ReviewRecord['blocking'] | undefined) ?? [],
            restored: (record.restored as string[] | undefined) ?? [],
          }}
          index={0}
        />
      ) : null}
      <details>
        <summary>The whole record</summary>
        <pre class="json">{JSON.stringify(record, null, 2)}</pre>
      </details>
    </>
  );
}
