/**
 * The operator's dashboard: a login, the list of runs, a run's page, the target queues and the host's environments. Served by the API at
 * /dashboard/ (same origin); every data call carries this tab's bearer token.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, token, whenUnauthorized } from './api';
import { RunList } from './runs';
import { QueueList } from './queues';
import { EnvironmentList } from './environments';
import { RunPage } from './run';

/**
 * The page a hash names: `#/runs/<id>` is a run, `#/queues` the target queues, `#/environments` the
 * host's environments, anything else the list (its filters in the hash's query).
 */
function route(hash: string): { page: 'list'; query: string } | { page: 'run'; id: string } | { page: 'queues' } | { page: 'environments' } {
  const path = hash.replace(/^#/, '');
  const run = /^\/runs\/([A-Za-z0-9._:-]+)$/.exec(path);
  if (run) return { page: 'run', id: run[1]! };
  if (path === '/queues') return { page: 'queues' };
  if (path === '/environments') return { page: 'environments' };
  const queryAt = path.indexOf('?');
  return { page: 'list', query: queryAt === -1 ? '' : path.slice(queryAt + 1) };
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return hash;
}

function Login({ onSignedIn, notice }: { onSignedIn: () => void; notice: string | undefined }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | undefined>(notice);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      // A token is kept only once the API accepts it.
      await api('GET', '/v1/runs?limit=1', undefined, value.trim());
      token.set(value.trim());
      onSignedIn();
    } catch (failure) {
      setError(
        failure instanceof Error && 'status' in failure && failure.status === 401
          ? 'The API refused this token.'
          : `Could not sign in: ${String(failure instanceof Error ? failure.message : failure)}`,
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="login">
      <form onSubmit={(event) => void submit(event)} aria-labelledby="login-title" data-testid="login">
        <h1 id="login-title">Tarmac dashboard</h1>
        <p>Sign in with an API token (TARMAC_API_TOKENS). It is kept for this tab only and sent as a bearer header.</p>
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={value}
          onInput={(event) => setValue(event.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <p role="alert" class="error">
          {error ?? ''}
        </p>
      </form>
    </main>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(token.get() !== null);
  const [notice, setNotice] = useState<string | undefined>();
  const hash = useHash();
  useEffect(() => {
    whenUnauthorized(() => {
      token.clear();
      setNotice('The API refused the token (401): sign in again.');
      setSignedIn(false);
    });
  }, []);
  if (!signedIn) return <Login onSignedIn={() => setSignedIn(true)} notice={notice} />;
  const current = route(hash);
  return (
    <>
      <a class="skip" href="#main" onClick={(event) => (event.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <p class="brand">Tarmac</p>
        <nav aria-label="Main">
          <a href="#/" aria-current={current.page === 'list' ? 'page' : undefined}>
            Runs
          </a>
          <a href="#/queues" aria-current={current.page === 'queues' ? 'page' : undefined}>
            Queues
          </a>
          <a href="#/environments" aria-current={current.page === 'environments' ? 'page' : undefined}>
            Environments
          </a>
        </nav>
        <button
          type="button"
          onClick={() => {
            token.clear();
            setNotice(undefined);
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {current.page === 'run' ? (
          <RunPage key={current.id} id={current.id} />
        ) : current.page === 'queues' ? (
          <QueueList />
        ) : current.page === 'environments' ? (
          <EnvironmentList />
        ) : (
          <RunList query={current.query} />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
