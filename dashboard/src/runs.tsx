/** The list of runs (GET /v1/runs) with the list API's filters, kept in the page's hash. */
import { useEffect, useState } from 'preact/hooks';
import type { RunSummary } from '../../api/schemas';
import { LandingPhase, LandingStatus } from '../../core/types';
import { executionStatuses } from '../../core/visibility-query';
import { api, query } from './api';

const filterNames = ['kind', 'repo', 'target', 'branch', 'phase', 'outcome', 'status', 'limit'] as const;
type Filters = Partial<Record<(typeof filterNames)[number], string>>;

function parseFilters(text: string): Filters {
  const params = new URLSearchParams(text);
  const filters: Filters = {};
  for (const name of filterNames) {
    const value = params.get(name);
    if (value) filters[name] = value;
  }
  return filters;
}

export function RunList({ query: hashQuery }: { query: string }) {
  const filters = parseFilters(hashQuery);
  const [draft, setDraft] = useState<Filters>(filters);
  const [runs, setRuns] = useState<RunSummary[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [loadedAt, setLoadedAt] = useState<string>('');

  useEffect(() => setDraft(parseFilters(hashQuery)), [hashQuery]);
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      try {
        const body = await api<{ runs: RunSummary[] }>('GET', `/v1/runs${query(parseFilters(hashQuery))}`);
        if (stopped) return;
        setRuns(body.runs);
        setError(undefined);
        setLoadedAt(new Date().toLocaleTimeString());
      } catch (failure) {
        if (!stopped) setError(failure instanceof Error ? failure.message : String(failure));
      }
    };
    void load();
    const timer = setInterval(() => void load(), 5000);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [hashQuery]);

  const apply = (event: Event) => {
    event.preventDefault();
    location.hash = `#/${query(draft)}`;
  };
  const field = (name: keyof Filters, label: string, options?: readonly string[]) => (
    <div class="field">
      <label for={`filter-${name}`}>{label}</label>
      {options ? (
        <select id={`filter-${name}`} value={draft[name] ?? ''} onChange={(event) => setDraft({ ...draft, [name]: event.currentTarget.value })}>
          <option value="">any</option>
          {options.map((option) => (
            <option value={option}>{option}</option>
          ))}
        </select>
      ) : (
        <input id={`filter-${name}`} value={draft[name] ?? ''} onInput={(event) => setDraft({ ...draft, [name]: event.currentTarget.value })} />
      )}
    </div>
  );

  return (
    <>
      <h1>Runs</h1>
      <form class="filters" onSubmit={apply} aria-label="Filters">
        {field('kind', 'Kind', ['landing', 'review-panel', 'fix-loop', 'nightly', 'merge-batch'])}
        {field('repo', 'Repository')}
        {field('target', 'Target')}
        {field('branch', 'Branch')}
        {field('phase', 'Phase', Object.values(LandingPhase))}
        {field('outcome', 'Outcome', Object.values(LandingStatus))}
        {field('status', 'Workflow status', executionStatuses)}
        {field('limit', 'At most')}
        <div class="field actions">
          <button type="submit">Apply filters</button>
          <button type="button" onClick={() => (location.hash = '#/')}>
            Clear
          </button>
        </div>
      </form>
      <p role="status" class="muted">
        {error ? '' : runs ? `${runs.length} run(s)${loadedAt ? `, as of ${loadedAt}` : ''}` : 'Loading…'}
      </p>
      {error ? (
        <p role="alert" class="error">
          {error}
        </p>
      ) : null}
      {runs && runs.length > 0 ? (
        <table class="runs" data-testid="runs">
          <caption>Runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Kind</th>
              <th scope="col">Status</th>
              <th scope="col">Phase</th>
              <th scope="col">Outcome</th>
              <th scope="col">Repository</th>
              <th scope="col">Target</th>
              <th scope="col">Branches</th>
              <th scope="col">Started</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((run) => (
              <tr data-run={run.id} data-kind={run.kind}>
                <th scope="row">
                  <a href={`#/runs/${run.id}`}>{run.id}</a>
                  {run.parent ? <span class="muted"> (in {run.parent})</span> : null}
                </th>
                <td>{run.kind}</td>
                <td>
                  <span class={`status status-${run.workflowStatus.toLowerCase()}`}>{run.workflowStatus}</span>
                </td>
                <td>{run.phase ?? ''}</td>
                <td>{run.outcome ?? ''}</td>
                <td class="wrap">{run.repo ?? ''}</td>
                <td>{run.target ?? ''}</td>
                <td>{(run.branches ?? []).join(', ')}</td>
                <td>
                  <time dateTime={run.startTime}>{new Date(run.startTime).toLocaleString()}</time>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : runs ? (
        <p>No run matches these filters.</p>
      ) : null}
    </>
  );
}
