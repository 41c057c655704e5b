/**
 * Environments (issue 24): the page of those cached on the API's host (GET /v1/environments), and
 * the run page's panel of a landing's environments (its outcome's `environments`).
 */
import { useEffect, useState } from 'preact/hooks';
import type { EnvironmentUse } from '../../api/schemas';
import { api } from './api';
import { environmentRows, environmentUseRows, type EgressHost, type EnvironmentView } from './environment-model';

const runLink = (id: string) => <a href={`#/runs/${id}`}>{id}</a>;

/** The hosts a setup reached: allowed ones plain, refused ones marked and with the gateway's reason. */
function EgressHosts({ hosts }: { hosts: EgressHost[] }) {
  if (hosts.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="egress">
      {hosts.map((host) => (
        <li data-egress={host.host} data-allowed={String(host.allowed)}>
          <code>{host.host}</code>{' '}
          {host.allowed ? (
            <span class="muted">
              allowed · {host.connections} connection(s), {host.traffic}
            </span>
          ) : (
            <span class="badge badge-failed">refused{host.reason ? `: ${host.reason}` : ''}</span>
          )}
        </li>
      ))}
    </ul>
  );
}

/** The run page's panel: each gated tree's environment, ENV_CACHE, and what its setup reached. */
export function EnvironmentUses({ uses }: { uses: readonly EnvironmentUse[] | undefined }) {
  const rows = environmentUseRows(uses);
  if (rows.length === 0) return null;
  return (
    <section aria-labelledby="environments-title" id="environments" data-section="environments">
      <h2 id="environments-title">Environments</h2>
      <table class="environments" data-testid="environment-uses">
        <thead>
          <tr>
            <th scope="col">Tree</th>
            <th scope="col">Key</th>
            <th scope="col">ENV_CACHE</th>
            <th scope="col">Build</th>
            <th scope="col">Egress of its setup</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr data-environment={row.shortKey} data-cache={row.cache}>
              <td>
                <code>{row.tree}</code>
              </td>
              <th scope="row">
                <code title={row.key}>{row.shortKey}</code>
              </th>
              <td>
                <span class={row.cache === 'hit' ? 'badge badge-cached' : 'badge'}>{row.cache}</span>
              </td>
              <td class={row.failed ? 'error' : ''}>{row.detail}</td>
              <td>
                <EgressHosts hosts={row.egress} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** The environments page: every environment cached on the API's host, most recently used first. */
export function EnvironmentList() {
  const [environments, setEnvironments] = useState<EnvironmentView[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      try {
        const body = await api<{ environments: EnvironmentView[] }>('GET', '/v1/environments');
        if (!stopped) setEnvironments(body.environments);
      } catch (failure) {
        if (!stopped) setError(failure instanceof Error ? failure.message : String(failure));
      }
    };
    void load();
    return () => {
      stopped = true;
    };
  }, []);
  const rows = environmentRows(environments ?? []);
  return (
    <>
      <h1>Environments</h1>
      <p class="muted">
        What repositories declare their gates and agents run in: a base image plus what the setup produced, built once per key (the declaration, the base image
        and the inputs, such as lockfiles, of the tree under test) and reused by every landing with the same inputs. These are the ones cached on the API's
        host; the least recently used go first once they pass the cache's limit, never while a run holds them.
      </p>
      <p role="status" class="muted">
        {error ? '' : environments ? `${environments.length} environment(s)` : 'Loading…'}
      </p>
      {error ? (
        <p role="alert" class="error">
          {error}
        </p>
      ) : null}
      {rows.length > 0 ? (
        <table class="environments" data-testid="environments">
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Repository</th>
              <th scope="col">Size</th>
              <th scope="col">Last used</th>
              <th scope="col">Built</th>
              <th scope="col">Runs using it</th>
              <th scope="col">Egress of its setup</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr data-environment={row.shortKey}>
                <th scope="row">
                  <code title={row.key}>{row.shortKey}</code>
                </th>
                <td class="wrap">
                  {row.repo} <span class="muted">on {row.baseImage}</span>
                </td>
                <td data-field="size">{row.size}</td>
                <td>
                  <time dateTime={row.lastUsedAt}>{new Date(row.lastUsedAt).toLocaleString()}</time>
                </td>
                <td>
                  in {row.build} by {runLink(row.builtBy)}
                </td>
                <td data-field="used-by">
                  {row.usedBy.length > 0 ? row.usedBy.map((id, at) => [at > 0 ? ', ' : '', runLink(id)]) : <span class="muted">none</span>}
                </td>
                <td>
                  <EgressHosts hosts={row.egress} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : environments ? (
        <p>No environment is cached on this host.</p>
      ) : null}
    </>
  );
}
