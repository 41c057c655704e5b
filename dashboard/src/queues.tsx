/** The target queues that run (GET /v1/queues): who holds each target, the batch in flight, the waiting line with ETAs. */
import { useEffect, useState } from 'preact/hooks';
import { api } from './api';
import { queuePanel, type QueueView } from './model';

const runLink = (id: string) => <a href={`#/runs/${id}`}>{id}</a>;

function Queue({ view, index }: { view: QueueView; index: number }) {
  const panel = queuePanel(view);
  const title = `queue-${index}-title`;
  return (
    <section class="queue" aria-labelledby={title} data-queue={view.queueId} data-target={view.target}>
      <h2 id={title}>
        {view.target} <span class="muted wrap">of {view.repo}</span>
      </h2>
      <dl class="facts">
        <dt>Holds the target</dt>
        <dd data-field="holder">
          {panel.holder?.kind === 'batch' ? (
            <>
              batch {runLink(panel.holder.id)}: {panel.holder.members.map((member, at) => [at > 0 ? ', ' : '', runLink(member)])}
            </>
          ) : panel.holder ? (
            runLink(panel.holder.id)
          ) : (
            'nobody: the target is free'
          )}
          {panel.holder && panel.inFlight ? <span class="muted"> (for {panel.inFlight})</span> : null}
        </dd>
        <dt>So far</dt>
        <dd data-field="admitted">
          {view.admitted} admitted, {view.batches} batch(es). {panel.turns}
        </dd>
      </dl>
      {panel.line.length > 0 ? (
        <table class="queue-line" data-testid="queue-line">
          <caption>Waiting line of {view.target}, by lane then arrival (position 0 goes next)</caption>
          <thead>
            <tr>
              <th scope="col">Position</th>
              <th scope="col">Landing</th>
              <th scope="col">Lane</th>
              <th scope="col">Batchable</th>
              <th scope="col">ETA (turn over)</th>
            </tr>
          </thead>
          <tbody>
            {panel.line.map((entry) => (
              <tr data-landing={entry.landingId} data-position={entry.position} data-lane={entry.lane}>
                <td>{entry.position}</td>
                <th scope="row">{runLink(entry.landingId)}</th>
                <td>{entry.lane}</td>
                <td>{entry.batchable ? 'yes' : 'no'}</td>
                <td data-field="eta">{entry.eta}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">Nobody waits.</p>
      )}
    </section>
  );
}

export function QueueList() {
  const [queues, setQueues] = useState<QueueView[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [loadedAt, setLoadedAt] = useState('');
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      try {
        const body = await api<{ queues: QueueView[] }>('GET', '/v1/queues');
        if (stopped) return;
        setQueues(body.queues);
        setError(undefined);
        setLoadedAt(new Date().toLocaleTimeString());
      } catch (failure) {
        if (!stopped) setError(failure instanceof Error ? failure.message : String(failure));
      }
    };
    void load();
    const timer = setInterval(() => void load(), 3000);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, []);
  return (
    <>
      <h1>Queues</h1>
      <p class="muted">
        One merge queue per repository and target: a landing that passed its gate waits here for its turn to merge, alone or in a speculative batch. Higher
        lanes (a landing's priority) go first; a batch in flight is never reordered.
      </p>
      <p role="status" class="muted">
        {error ? '' : queues ? `${queues.length} queue(s) running${loadedAt ? `, as of ${loadedAt}` : ''}` : 'Loading…'}
      </p>
      {error ? (
        <p role="alert" class="error">
          {error}
        </p>
      ) : null}
      {queues?.map((view, index) => (
        <Queue view={view} index={index} />
      ))}
      {queues && queues.length === 0 ? <p>No target queue runs.</p> : null}
    </>
  );
}
