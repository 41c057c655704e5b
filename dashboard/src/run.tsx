/**
 * A run's page: what it is doing (phase timeline, step graph, gate rounds, environments, panels, sessions,
 * fix loops, meters against the budget), what it waits on (questions, a paused budget), what
 * it prints (the live log) and what an operator can do (answer, cancel, extend or stop the budget).
 * Live through the run's event stream; the status is read again after each journal event.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { RunEvent } from '../../core/events';
import type { SessionOutcome, SessionStatusView } from '../../core/session-types';
import type { LandingOutcome, ReviewRecord } from '../../core/types';
import { api, ApiFailure, token } from './api';
import type { BatchOutcome } from '../../core/batch-types';
import { batchLineage, batchMembers, gateRounds, metersAgainstBudget, phaseTimeline, sessionRows, stepGraph, supersededBy, type LandingView, type Marker } from './model';
import { followEvents, type StreamState } from './stream';
import { EnvironmentUses } from './environments';

interface RunView {
  id: string;
  type: string;
  workflowStatus: string;
  status: unknown;
  result?: unknown;
}

interface LogLine {
  n: number;
  file: string;
  line: string;
  at?: string;
}

const maxLogLines = 400;
const maxEvents = 1000;

const markerText: Record<Marker, string> = {
  skipped: 'skipped',
  cached: 'cached',
  'partly-cached': 'partly cached',
  respawned: 'respawned',
  reattached: 'reattached',
  superseded: 'superseded',
  escalated: 'escalated',
  failed: 'failed',
  running: 'running',
  asked: 'asked',
  flaky: 'flaky: green when run again',
  'pre-existing': 'pre-existing: red on the base too',
  'failed-again': 'red again, green on the base',
  quarantined: 'quarantined',
  batched: 'merged in a batch',
  culprit: "a batch's culprit",
};

function Markers({ markers }: { markers: readonly Marker[] }) {
  return (
    <>
      {markers.map((marker) => (
        <span class={`badge badge-${marker}`} data-marker={marker}>
          {markerText[marker]}
        </span>
      ))}
    </>
  );
}

function Section({ id, title, children }: { id: string; title: string; children: ComponentChildren }) {
  return (
    <section aria-labelledby={`${id}-title`} id={id} data-section={id}>
      <h2 id={`${id}-title`}>{title}</h2>
      {children}
    </section>
  );
}

const short = (sha: string | undefined) => (sha ? sha.slice(0, 10) : '');
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const basename = (path: string) => path.split('/').at(-1) ?? path;
const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A one-line reading of a journal event, for the events list. */
function eventText(event: RunEvent): string {
  switch (event.kind) {
    case 'phase':
      return `phase ${event.phase}`;
    case 'step':
      return `${event.name} ${event.status}${event.detail ? `: ${event.detail}` : ''}`;
    case 'gate':
      return `gate ${event.suiteId} round ${event.round}${event.evidence === 'base' ? ' on the base' : event.evidence === 'same-tree' ? ' again' : ''}: ${event.status} (exit ${event.exitCode ?? 'none'}${event.cache === 'hit' ? ', GATE_CACHE=hit' : ''})`;
    case 'session':
      return `session ${event.sessionId} ${event.type}${event.harnessModel ? ` on ${event.harnessModel}` : ''}${event.class ? ` [${event.class}]` : ''}${event.detail ? `: ${event.detail}` : ''}`;
    case 'cache':
      return `REVIEW_CACHE=${event.cache} for ${short(event.treeSha)}${event.restored.length ? ` (restored: ${event.restored.join(', ')})` : ''}`;
    case 'meters':
      return `meters: ${event.meters.inputTokens + event.meters.outputTokens} tokens, $${event.meters.costUsd.toFixed(2)}`;
    case 'question':
      return `question ${event.id}${event.from ? ` from ${event.from}` : ''}${event.answer !== undefined ? ` answered: ${event.answer}` : `: ${event.question}`}`;
    case 'budget':
      return `budget ${event.state}: ${event.reason}`;
    case 'host':
      return `host ${event.hostId} ${event.state}: ${event.reason}`;
    case 'outcome':
      return `outcome ${event.status}: ${event.summary}`;
    case 'trimmed':
      return `${event.dropped} older event(s) trimmed`;
  }
}

export function RunPage({ id }: { id: string }) {
  const [run, setRun] = useState<RunView | undefined>();
  const [landing, setLanding] = useState<LandingView | undefined>();
  const [loadError, setLoadError] = useState<string | undefined>();
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [logs, setLogs] = useState<LogLine[]>([]);
  const [stream, setStream] = useState<{ state: StreamState; detail?: string }>({ state: 'connecting' });
  const [ended, setEnded] = useState(false);
  const [sessionDetails, setSessionDetails] = useState<Map<string, SessionStatusView | undefined>>(new Map());
  const [logFile, setLogFile] = useState<string>('');
  const logRef = useRef<HTMLElement>(null);
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
  const rows = useMemo(() => sessionRows(events, outcome, sessionDetails), [events, outcome, sessionDetails]);

  // Each session's own status (tokens, attempts, escalations): read when it changes, once more when it ended.
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
          next.set(row.sessionId, status ?? (result ? { state: 'done', attempt: result.attempts.length, harnessModel: result.harnessModel, decisions: result.decisions, meters: result.meters, outcome: result } : undefined));
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

  const shownLogs = logFile ? logs.filter((line) => line.file === logFile) : logs;
  const logFiles = [...new Set(logs.map((line) => line.file))];
  useEffect(() => {
    const element = logRef.current;
    if (element) element.scrollTop = element.scrollHeight;
  }, [shownLogs.length]);

  const showLog = (file: string) => {
    setLogFile(file);
    document.getElementById('log')?.focus();
  };

  if (!run) {
    return (
      <>
        <h1>Run {id}</h1>
        <p role={loadError ? 'alert' : 'status'} class={loadError ? 'error' : 'muted'}>
          {loadError ?? 'Loading…'}
        </p>
      </>
    );
  }

  const running = run.workflowStatus === 'RUNNING' && !ended;
  const pending = landing?.pendingQuestions ?? (run.status as { pendingQuestions?: LandingView['pendingQuestions'] } | null)?.pendingQuestions ?? [];
  const reviews: ReviewRecord[] = landing?.reviews ?? [];

  return (
    <>
      <h1>
        <span class="muted">{run.type}</span> {id}
      </h1>
      <dl class="facts" data-testid="facts">
        <dt>Workflow status</dt>
        <dd data-field="workflowStatus">{run.workflowStatus}</dd>
        {landing ? (
          <>
            <dt>Phase</dt>
            <dd data-field="phase">{landing.phase}</dd>
          </>
        ) : null}
        {outcome ? (
          <>
            <dt>Outcome</dt>
            <dd data-field="outcome">
              <strong class={`outcome outcome-${outcome.status}`}>{outcome.status}</strong> {outcome.summary}
            </dd>
            <dt>Repository</dt>
            <dd class="wrap">
              {outcome.repo} → {outcome.target} ({outcome.heads.map((head) => `${head.branch}@${short(head.sha)}`).join(', ')})
            </dd>
          </>
        ) : null}
        {landing?.pausedFor ? (
          <>
            <dt>Paused</dt>
            <dd>waits for its budget: {landing.pausedFor}</dd>
          </>
        ) : null}
        {landing?.statusUnavailable ? (
          <>
            <dt>Status</dt>
            <dd>{landing.statusUnavailable}</dd>
          </>
        ) : null}
      </dl>
      {loadError ? (
        <p role="alert" class="error">
          {loadError}
        </p>
      ) : null}

      {pending.length > 0 ? <Questions id={id} questions={pending} onAnswered={() => void load()} /> : null}
      {running ? <Actions id={id} kind={run.type} paused={landing?.pausedFor} onDone={() => void load()} /> : null}

      {landing ? (
        <>
          <Section id="phases" title="Phase timeline">
            <ol class="timeline">
              {phaseTimeline(events, finished).map((entry) => (
                <li data-phase={entry.phase} aria-current={entry.current ? 'step' : undefined} class={entry.current ? 'current' : ''}>
                  <strong>{entry.phase}</strong> <time dateTime={entry.at}>{new Date(entry.at).toLocaleTimeString()}</time>
                  {entry.endedAt ? <span class="muted"> · {seconds(Date.parse(entry.endedAt) - Date.parse(entry.at))}</span> : entry.current ? <span class="muted"> · now</span> : null}
                </li>
              ))}
            </ol>
            {outcome ? (
              <p>
                Ended in <strong>{outcome.endedInPhase}</strong>: {outcome.status}
              </p>
            ) : null}
          </Section>

          <Section id="steps" title="Steps">
            <ol class="steps" data-testid="steps">
              {stepGraph({ ...landing, outcome }, events).map((step) => (
                <li data-step={step.name} data-status={step.status} data-markers={step.markers.join(' ')} class={`step step-${step.status}`}>
                  <span class="step-name">
                    {step.kind} {step.subject ? <code>{step.subject}</code> : <code>{step.name}</code>}
                  </span>{' '}
                  <span class="status">{step.status}</span> <Markers markers={step.markers} />
                  {step.detail ? <span class="detail"> {step.detail}</span> : null}
                </li>
              ))}
            </ol>
          </Section>

          <Section id="gates" title="Gate rounds">
            {gateRounds(landing.gates, outcome).map((round) => (
              <table class="gates" data-round={round.round}>
                <caption>
                  Round {round.round} on tree <code>{short(round.treeSha)}</code>
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Suite</th>
                    <th scope="col">Result</th>
                    <th scope="col">Exit</th>
                    <th scope="col">Time</th>
                    <th scope="col">Lineage</th>
                    <th scope="col">Log</th>
                  </tr>
                </thead>
                <tbody>
                  {round.results.map((result) => {
                    const by = supersededBy(outcome, result.suiteId, round.round);
                    return (
                      <tr data-gate={`${result.suiteId}#${round.round}`} data-status={result.status} data-markers={result.markers.join(' ')}>
                        <th scope="row">{result.suiteId}</th>
                        <td>
                          <span class={`status status-${result.status}`}>{result.status}</span>
                        </td>
                        <td>{result.exitCode ?? 'none'}</td>
                        <td>{seconds(result.durationMs)}</td>
                        <td>
                          <Markers markers={result.markers} />
                          {by ? (
                            <span>
                              {' '}
                              by round {by.round} (tree <code>{short(by.treeSha)}</code>)
                            </span>
                          ) : null}
                        </td>
                        <td>
                          <button type="button" class="link" onClick={() => showLog(basename(result.logRef))} aria-label={`Show the log of ${result.suiteId}, round ${round.round}`}>
                            {basename(result.logRef)}
                          </button>
                          {(result.evidence ?? []).map((run) => (
                            <span data-evidence={run.on}>
                              {' '}
                              {run.on === 'base' ? 'base' : 'again'} {run.status}:{' '}
                              <button type="button" class="link" onClick={() => showLog(basename(run.logRef))} aria-label={`Show the log of ${result.suiteId}, round ${round.round}, ${run.on === 'base' ? 'on the base' : 'again on the same tree'}`}>
                                {basename(run.logRef)}
                              </button>
                            </span>
                          ))}
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            ))}
            {landing.gates.length === 0 ? <p class="muted">No gate has run yet.</p> : null}
          </Section>

          <EnvironmentUses uses={outcome?.environments} />

          <BatchLineageSection id={id} outcome={outcome} />

          {reviews.length > 0 ? (
            <Section id="reviews" title="Review panels">
              {reviews.map((review, index) => (
                <Review review={review} index={index} />
              ))}
            </Section>
          ) : null}

          {outcome?.fixLoops?.length ? (
            <Section id="fix-loops" title="Fix loops">
              <ul>
                {outcome.fixLoops.map((loop) => (
                  <li data-fix-loop={loop.id}>
                    <a href={`#/runs/${loop.id}`}>{loop.id}</a>: {loop.outcome}; playbook {loop.playbookUsed ?? 'none'}; {loop.repairAttempts} repair(s); files {loop.filesChanged.join(', ') || 'none'}
                  </li>
                ))}
              </ul>
            </Section>
          ) : null}
        </>
      ) : (
        <Section id="status" title="Status">
          <OtherRun run={run} />
        </Section>
      )}

      <Section id="sessions" title="Agent sessions">
        {rows.length > 0 ? (
          <table class="sessions" data-testid="sessions">
            <thead>
              <tr>
                <th scope="col">Session</th>
                <th scope="col">Role</th>
                <th scope="col">harness#model</th>
                <th scope="col">Status</th>
                <th scope="col">Class</th>
                <th scope="col">Ladder rung</th>
                <th scope="col">Attempts</th>
                <th scope="col">Tokens (in / out)</th>
                <th scope="col">Cost</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr data-session={row.sessionId} data-markers={row.markers.join(' ')}>
                  <th scope="row">
                    {row.sessionId} <Markers markers={row.markers} />
                  </th>
                  <td>{row.role ?? ''}</td>
                  <td>{row.harnessModel ?? ''}</td>
                  <td>{row.status ?? ''}</td>
                  <td data-field="class">{row.attemptClass ?? ''}</td>
                  <td data-field="rung">{row.rung}</td>
                  <td>
                    {row.attempts}
                    {row.respawns ? ` (${row.respawns} respawn(s))` : ''}
                  </td>
                  <td data-field="tokens">{row.inputTokens === undefined ? '' : `${row.inputTokens} / ${row.outputTokens ?? 0}`}</td>
                  <td>{row.costUsd === undefined ? '' : `$${row.costUsd.toFixed(2)}`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <p class="muted">No agent session.</p>
        )}
      </Section>

      {landing ? (
        <Section id="meters" title="Meters and budget">
          <ul class="meters">
            {metersAgainstBudget(landing.meters, landing.budget).map((meter) => {
              const id = `meter-${meter.name.replace(/\W+/g, '-')}`;
              const text = meter.unit === 'USD' ? `$${meter.used.toFixed(2)}${meter.limit !== undefined ? ` of $${meter.limit.toFixed(2)}` : ''}` : `${meter.unit === 'ms' ? seconds(meter.used) : meter.used}${meter.limit !== undefined ? ` of ${meter.unit === 'ms' ? seconds(meter.limit) : `${meter.limit} ${meter.unit}`}` : ` ${meter.unit === 'ms' ? '' : meter.unit}`}`;
              return (
                <li data-meter={meter.name}>
                  <label id={id}>{meter.name}</label>
                  {meter.limit !== undefined ? <meter aria-labelledby={id} min={0} max={meter.limit} high={meter.limit * 0.8} value={Math.min(meter.used, meter.limit)} /> : null}
                  <span>{text}</span>
                </li>
              );
            })}
          </ul>
          {!landing.budget ? <p class="muted">This landing has no budget of its own.</p> : null}
        </Section>
      ) : null}

      <section aria-labelledby="log-title" data-section="log">
        <h2 id="log-title">Live log</h2>
        <div class="toolbar">
          <p role="status" data-stream-state={stream.state} class={`stream stream-${stream.state}`}>
            Stream: {stream.state}
            {stream.detail ? ` (${stream.detail})` : ''}
          </p>
          <label for="log-file">File</label>
          <select id="log-file" value={logFile} onChange={(event) => setLogFile(event.currentTarget.value)}>
            <option value="">all files</option>
            {[...new Set([...logFiles, ...(logFile ? [logFile] : [])])].map((file) => (
              <option value={file}>{file}</option>
            ))}
          </select>
        </div>
        <div id="log" class="log" role="log" aria-live="polite" aria-relevant="additions" aria-label="Runner log" tabIndex={0} ref={logRef as never} data-testid="log">
          <ol>
            {shownLogs.map((line) => (
              <li key={line.n} data-file={line.file}>
                <span class="log-file">{line.file}</span> {line.line}
              </li>
            ))}
          </ol>
        </div>
      </section>

      <Section id="events" title="Events">
        <ol class="events" data-testid="events">
          {events.slice(-200).map((event) => (
            <li data-kind={event.kind} key={event.seq}>
              <span class="muted">#{event.seq}</span> <time dateTime={event.at}>{new Date(event.at).toLocaleTimeString()}</time> {eventText(event)}
            </li>
          ))}
        </ol>
      </Section>
    </>
  );
}

function Review({ review, index }: { review: ReviewRecord; index: number }) {
  const cacheMarker: Marker[] = review.cache === 'hit' ? ['cached'] : review.cache === 'partial' ? ['partly-cached'] : [];
  return (
    <article class="review" data-review={index + 1} data-cache={review.cache} aria-labelledby={`review-${index}`}>
      <h3 id={`review-${index}`}>
        Panel {index + 1}: {review.status} <Markers markers={cacheMarker} />
      </h3>
      <p>
        REVIEW_CACHE=<strong data-field="cache">{review.cache}</strong> on tree <code>{short(review.treeSha)}</code>; {review.sessionsStarted} reviewer session(s) started
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
              <td>{reviewer.respawns ? <Markers markers={['respawned']} /> : ''} {reviewer.respawns ?? ''}</td>
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
function BatchLineageSection({ id, outcome }: { id: string; outcome: LandingOutcome | undefined }) {
  const lineage = batchLineage(outcome, id);
  if (!lineage) return null;
  return (
    <Section id="batch" title="Merge queue">
      {lineage.batch ? (
        <div data-batch={lineage.batch.id} data-round={lineage.batch.round}>
          <p>
            <Markers markers={['batched']} /> Merged in the speculative batch <a href={`#/runs/${lineage.batch.id}`}>{lineage.batch.id}</a>: gate round {lineage.batch.round} passed on tree{' '}
            <code>{short(lineage.batch.treeSha)}</code>, and the target fast-forwarded to it (this landing's commit on the stack: <code>{short(lineage.batch.stackedSha)}</code>).
          </p>
          <p id="batch-members-title">Landed in the same fast-forward:</p>
          <ul aria-labelledby="batch-members-title" class="members">
            {lineage.batch.members.map((member) => (
              <li data-member={member.id}>
                {member.self ? (
                  <strong>{member.id} (this landing)</strong>
                ) : (
                  <a href={`#/runs/${member.id}`}>{member.id}</a>
                )}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {lineage.culprits.length > 0 ? (
        <ul aria-label="Batches that named this landing the culprit">
          {lineage.culprits.map((culprit) => (
            <li data-culprit-in={culprit.batchId} data-round={culprit.round}>
              <Markers markers={['culprit']} /> Named the culprit of batch <a href={`#/runs/${culprit.batchId}`}>{culprit.batchId}</a>: round {culprit.round}, the stack up to this landing, was red
              on tree <code>{short(culprit.treeSha)}</code> ({culprit.failing.join(', ') || 'no suite named'}); it got a fixup round and came back to the queue at its place.
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
function OtherRun({ run }: { run: RunView }) {
  const record = (run.result ?? run.status ?? {}) as Record<string, unknown>;
  const facts = ['status', 'outcome', 'summary', 'cache', 'playbookUsed', 'phase', 'state'].filter((key) => record[key] !== undefined && typeof record[key] !== 'object');
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
      {Array.isArray(record.reviewers) ? <Review review={{ ...(record as unknown as ReviewRecord), blocking: (record.blocking as ReviewRecord['blocking'] | undefined) ?? [], restored: (record.restored as string[] | undefined) ?? [] }} index={0} /> : null}
      <details>
        <summary>The whole record</summary>
        <pre class="json">{JSON.stringify(record, null, 2)}</pre>
      </details>
    </>
  );
}

function Questions({ id, questions, onAnswered }: { id: string; questions: LandingView['pendingQuestions']; onAnswered: () => void }) {
  return (
    <section aria-labelledby="questions-title" class="questions" data-section="questions">
      <h2 id="questions-title">Waiting for an answer</h2>
      {questions.map((question) => (
        <QuestionForm id={id} question={question} onAnswered={onAnswered} />
      ))}
    </section>
  );
}

function QuestionForm({ id, question, onAnswered }: { id: string; question: LandingView['pendingQuestions'][number]; onAnswered: () => void }) {
  const [text, setText] = useState('');
  const [state, setState] = useState<{ busy: boolean; message?: string; error?: boolean }>({ busy: false });
  const field = `answer-${question.id}`;
  const submit = async (event: Event) => {
    event.preventDefault();
    setState({ busy: true });
    try {
      await api('POST', `/v1/runs/${id}/answers`, { text, questionId: question.id });
      setState({ busy: false, message: 'Answer sent; the run goes on.' });
      onAnswered();
    } catch (error) {
      setState({ busy: false, message: describe(error), error: true });
    }
  };
  return (
    <form onSubmit={(event) => void submit(event)} class="question" data-question={question.id}>
      <p class="question-text" id={`${field}-question`}>
        {question.question}
      </p>
      <p class="muted">
        {question.from ? `From ${question.from}. ` : ''}
        {question.why ?? ''}
      </p>
      <label for={field}>Your answer</label>
      <textarea id={field} rows={3} value={text} aria-describedby={`${field}-question ${field}-hint`} onInput={(event) => setText(event.currentTarget.value)} />
      <p id={`${field}-hint`} class="muted">
        An empty answer is a decision not to go on (the run ends needs-decision).
      </p>
      <button type="submit" disabled={state.busy}>
        Send answer
      </button>
      <p role={state.error ? 'alert' : 'status'} class={state.error ? 'error' : ''}>
        {state.message ?? ''}
      </p>
    </form>
  );
}

function Actions({ id, kind, paused, onDone }: { id: string; kind: string; paused: string | undefined; onDone: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [budget, setBudget] = useState({ tokens: '', costUsd: '', sessions: '', wallMinutes: '' });
  const [message, setMessage] = useState<{ text: string; error?: boolean } | undefined>();
  const act = async (what: string, call: () => Promise<unknown>) => {
    try {
      await call();
      setMessage({ text: what });
      onDone();
    } catch (error) {
      setMessage({ text: describe(error), error: true });
    }
  };
  const extend = (event: Event) => {
    event.preventDefault();
    const number = (text: string) => (text.trim() === '' ? undefined : Number(text));
    const wallMinutes = number(budget.wallMinutes);
    const command = {
      action: 'extend',
      ...(number(budget.tokens) !== undefined ? { tokens: number(budget.tokens) } : {}),
      ...(number(budget.costUsd) !== undefined ? { costUsd: number(budget.costUsd) } : {}),
      ...(number(budget.sessions) !== undefined ? { sessions: number(budget.sessions) } : {}),
      ...(wallMinutes !== undefined ? { wallMs: Math.round(wallMinutes * 60_000) } : {}),
    };
    void act('Budget extended.', () => api('POST', `/v1/runs/${id}/budget`, command));
  };
  const input = (name: keyof typeof budget, label: string, step: string) => (
    <div class="field">
      <label for={`budget-${name}`}>{label}</label>
      <input id={`budget-${name}`} type="number" min="0" step={step} inputMode="decimal" value={budget[name]} onInput={(event) => setBudget({ ...budget, [name]: event.currentTarget.value })} />
    </div>
  );
  return (
    <section aria-labelledby="actions-title" data-section="actions">
      <h2 id="actions-title">Actions</h2>
      {kind === 'landing' ? (
        <div class="actions">
          {confirming ? (
            <>
              <button type="button" class="danger" onClick={() => void act('Cancel requested: its containers stop and cleanup runs.', () => api('POST', `/v1/landings/${id}/cancel`))}>
                Confirm: cancel this landing
              </button>
              <button type="button" onClick={() => setConfirming(false)}>
                Keep it running
              </button>
            </>
          ) : (
            <button type="button" onClick={() => setConfirming(true)}>
              Cancel landing…
            </button>
          )}
        </div>
      ) : null}
      <form class="budget" onSubmit={extend} aria-labelledby="budget-title">
        <h3 id="budget-title">Budget{paused ? ` (paused: ${paused})` : ''}</h3>
        <p class="muted">Add to the run's budget (a run paused for it goes on), or stop it.</p>
        {input('tokens', 'Tokens to add', '1')}
        {input('costUsd', 'US dollars to add', '0.01')}
        {input('sessions', 'Sessions to add', '1')}
        {input('wallMinutes', 'Minutes to add', '1')}
        <div class="field actions">
          <button type="submit">Extend budget</button>
          <button type="button" class="danger" onClick={() => void act('Stop sent.', () => api('POST', `/v1/runs/${id}/budget`, { action: 'stop' }))}>
            Stop at the budget
          </button>
        </div>
      </form>
      <p role={message?.error ? 'alert' : 'status'} class={message?.error ? 'error' : ''}>
        {message?.text ?? ''}
      </p>
    </section>
  );
}
