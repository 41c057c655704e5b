/**
 * What the run page knows of a run, kept current: its view (GET /v1/runs/:id, and GET
 * /v1/landings/:id for a landing), its journal events and log lines from the event stream, and
 * each agent session's own status. The status is read again after each journal event, and every
 * few seconds for runs without a stream.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { LandingOutcomeView as LandingOutcome, RunEvent, RunView } from '../../api/schemas';
import type { SessionOutcome, SessionStatusView } from '../../core/session-types';
import { api, ApiFailure, token } from './api';
import { sessionRows, type LandingView } from './model';
import { describe } from './run-parts';
import { followEvents, type StreamState } from './stream';

export interface LogLine {
  n: number;
  file: string;
  line: string;
  at?: string;
}

const maxLogLines = 400;
const maxEvents = 1000;

/** The run's view, events, log and stream state, followed live. */
export function useRunState(id: string) {
  const [run, setRun] = useState<RunView | undefined>();
  const [landing, setLanding] = useState<LandingView | undefined>();
  const [loadError, setLoadError] = useState<string | undefined>();
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [logs, setLogs] = useState<LogLine[]>([]);
  const [stream, setStream] = useState<{ state: StreamState; detail?: string }>({ state: 'connecting' });
  const [ended, setEnded] = useState(false);
  const reloadTimer = useRef<number | undefined>(undefined);
  const logCount = useRef(0);

  const load = async () => {
    try {
      const view = await api<RunView>('GET', `/v1/runs/${id}`);
      setRun(view);
      if (view.type === 'landing') setLanding(await api<LandingView>('GET', `/v1/landings/${id}`));
      setLoadError(undefined);
    } catch (error) {
      setLoadError(describe(error));
    }
  };
  const reloadSoon = () => {
    if (reloadTimer.current !== undefined) return;
    reloadTimer.current = window.setTimeout(() => {
      reloadTimer.current = undefined;
      void load();
    }, 300);
  };

  useEffect(() => {
    void load();
    const bearer = token.get();
    if (!bearer) return;
    const follower = followEvents(`/v1/runs/${id}/events`, bearer, {
      message(message) {
        if (message.event === 'log') {
          const data = JSON.parse(message.data) as { file: string; line: string; at?: string };
          logCount.current += 1;
          const entry = { n: logCount.current, ...data };
          setLogs((lines) => (lines.length >= maxLogLines ? [...lines.slice(lines.length - maxLogLines + 1), entry] : [...lines, entry]));
          return;
        }
        if (message.event === 'end') {
          setEnded(true);
          void load();
          return;
        }
        if (message.event === 'error') {
          setStream({ state: 'reconnecting', detail: (JSON.parse(message.data) as { message?: string }).message ?? 'the stream failed' });
          return;
        }
        const event = JSON.parse(message.data) as RunEvent;
        setEvents((list) => (list.some((seen) => seen.seq === event.seq) ? list : [...list, event].slice(-maxEvents)));
        reloadSoon();
      },
      state(state, detail) {
        setStream({ state, ...(detail ? { detail } : {}) });
      },
    });
    // Runs without a stream (nightlies, sessions) and quiet ones are read again now and then.
    const poll = setInterval(() => void load(), 5000);
    return () => {
      follower.close();
      clearInterval(poll);
      if (reloadTimer.current !== undefined) clearTimeout(reloadTimer.current);
    };
  }, [id]);

  const finished = ended || (run !== undefined && run.workflowStatus !== 'RUNNING');
  const outcome = landing?.outcome ?? (run?.type === 'landing' ? (run.result as LandingOutcome | undefined) : undefined);
  const sessions = useSessionRows(id, events, outcome, finished);
  return { run, landing, loadError, events, logs, stream, ended, finished, outcome, sessions, load };
}

/** The run's agent sessions, each with its own status (tokens, attempts, escalations): read when it changes, once more when the run ended. */
function useSessionRows(id: string, events: RunEvent[], outcome: LandingOutcome | undefined, finished: boolean) {
  const [sessionDetails, setSessionDetails] = useState<Map<string, SessionStatusView | undefined>>(new Map());
  const rows = useMemo(() => sessionRows(events, outcome, sessionDetails), [events, outcome, sessionDetails]);
  const sessionKey = rows.map((row) => `${row.sessionId}:${row.status}:${row.attempts}`).join('|');
  useEffect(() => {
    let stopped = false;
    void (async () => {
      const next = new Map(sessionDetails);
      for (const row of rows) {
        try {
          const view = await api<RunView>('GET', `/v1/runs/${id}.${row.sessionId}`);
          const status = view.status as SessionStatusView | null;
          const result = view.result as SessionOutcome | undefined;
          next.set(
            row.sessionId,
            status ??
              (result
                ? {
                    state: 'done',
                    attempt: result.attempts.length,
                    harnessModel: result.harnessModel,
                    decisions: result.decisions,
                    meters: result.meters,
                    outcome: result,
                  }
                : undefined),
          );
        } catch (error) {
          if (!(error instanceof ApiFailure && error.status === 404)) next.set(row.sessionId, undefined);
        }
      }
      if (!stopped) setSessionDetails(next);
    })();
    return () => {
      stopped = true;
    };
  }, [sessionKey, finished]);
  return rows;
}
