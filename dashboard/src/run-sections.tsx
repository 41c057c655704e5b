/**
 * The sections of a run's page, one component each: the header facts, the phase timeline, the
 * step graph, the gate rounds, the fix loops, the agent sessions, the meters against the budget,
 * the live log and the journal's events.
 */
import { useEffect, useRef } from 'preact/hooks';
import type { LandingOutcomeView as LandingOutcome, RunEvent, RunView } from '../../api/schemas';
import { gateRounds, metersAgainstBudget, phaseTimeline, stepGraph, supersededBy, type LandingView, type SessionRow } from './model';
import { basename, Markers, Section, seconds, short } from './run-parts';
import type { LogLine } from './run-state';
import type { StreamState } from './stream';

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

/** The run's name, workflow status, phase, outcome, and why it waits or why its status is missing. */
export function RunHeader({
  id,
  run,
  landing,
  outcome,
  loadError,
}: {
  id: string;
  run: RunView;
  landing: LandingView | undefined;
  outcome: LandingOutcome | undefined;
  loadError: string | undefined;
}) {
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
    </>
  );
}

export function PhaseTimeline({ events, finished, outcome }: { events: readonly RunEvent[]; finished: boolean; outcome: LandingOutcome | undefined }) {
  return (
    <Section id="phases" title="Phase timeline">
      <ol class="timeline">
        {phaseTimeline(events, finished).map((entry) => (
          <li data-phase={entry.phase} aria-current={entry.current ? 'step' : undefined} class={entry.current ? 'current' : ''}>
            <strong>{entry.phase}</strong> <time dateTime={entry.at}>{new Date(entry.at).toLocaleTimeString()}</time>
            {entry.endedAt ? (
              <span class="muted"> · {seconds(Date.parse(entry.endedAt) - Date.parse(entry.at))}</span>
            ) : entry.current ? (
              <span class="muted"> · now</span>
            ) : null}
          </li>
        ))}
      </ol>
      {outcome ? (
        <p>
          Ended in <strong>{outcome.endedInPhase}</strong>: {outcome.status}
        </p>
      ) : null}
    </Section>
  );
}

export function StepList({ landing, outcome, events }: { landing: LandingView; outcome: LandingOutcome | undefined; events: readonly RunEvent[] }) {
  return (
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
  );
}

export function GateRounds({ landing, outcome, showLog }: { landing: LandingView; outcome: LandingOutcome | undefined; showLog: (file: string) => void }) {
  return (
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
                    <button
                      type="button"
                      class="link"
                      onClick={() => showLog(basename(result.logRef))}
                      aria-label={`Show the log of ${result.suiteId}, round ${round.round}`}
                    >
                      {basename(result.logRef)}
                    </button>
                    {(result.evidence ?? []).map((run) => (
                      <span data-evidence={run.on}>
                        {' '}
                        {run.on === 'base' ? 'base' : 'again'} {run.status}:{' '}
                        <button
                          type="button"
                          class="link"
                          onClick={() => showLog(basename(run.logRef))}
                          aria-label={`Show the log of ${result.suiteId}, round ${round.round}, ${run.on === 'base' ? 'on the base' : 'again on the same tree'}`}
                        >
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
  );
}

export function FixLoops({ loops }: { loops: NonNullable<LandingOutcome['fixLoops']> }) {
  return (
    <Section id="fix-loops" title="Fix loops">
      <ul>
        {loops.map((loop) => (
          <li data-fix-loop={loop.id}>
            <a href={`#/runs/${loop.id}`}>{loop.id}</a>: {loop.outcome}; playbook {loop.playbookUsed ?? 'none'}; {loop.repairAttempts} repair(s); files{' '}
            {loop.filesChanged.join(', ') || 'none'}
          </li>
        ))}
      </ul>
    </Section>
  );
}

export function SessionTable({ rows }: { rows: readonly SessionRow[] }) {
  return (
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
  );
}

export function MetersAndBudget({ landing }: { landing: LandingView }) {
  return (
    <Section id="meters" title="Meters and budget">
      <ul class="meters">
        {metersAgainstBudget(landing.meters, landing.budget).map((meter) => {
          const id = `meter-${meter.name.replace(/\W+/g, '-')}`;
          const text =
            meter.unit === 'USD'
              ? `$${meter.used.toFixed(2)}${meter.limit !== undefined ? ` of $${meter.limit.toFixed(2)}` : ''}`
              : `${meter.unit === 'ms' ? seconds(meter.used) : meter.used}${meter.limit !== undefined ? ` of ${meter.unit === 'ms' ? seconds(meter.limit) : `${meter.limit} ${meter.unit}`}` : ` ${meter.unit === 'ms' ? '' : meter.unit}`}`;
          return (
            <li data-meter={meter.name}>
              <label id={id}>{meter.name}</label>
              {meter.limit !== undefined ? (
                <meter aria-labelledby={id} min={0} max={meter.limit} high={meter.limit * 0.8} value={Math.min(meter.used, meter.limit)} />
              ) : null}
              <span>{text}</span>
            </li>
          );
        })}
      </ul>
      {!landing.budget ? <p class="muted">This landing has no budget of its own.</p> : null}
    </Section>
  );
}

export function LiveLog({
  logs,
  stream,
  logFile,
  setLogFile,
}: {
  logs: readonly LogLine[];
  stream: { state: StreamState; detail?: string };
  logFile: string;
  setLogFile: (file: string) => void;
}) {
  const logRef = useRef<HTMLElement>(null);
  const shownLogs = logFile ? logs.filter((line) => line.file === logFile) : logs;
  const logFiles = [...new Set(logs.map((line) => line.file))];
  useEffect(() => {
    const element = logRef.current;
    if (element) element.scrollTop = element.scrollHeight;
  }, [shownLogs.length]);
  return (
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
      <div
        id="log"
        class="log"
        role="log"
        aria-live="polite"
        aria-relevant="additions"
        aria-label="Runner log"
        tabIndex={0}
        ref={logRef as never}
        data-testid="log"
      >
        <ol>
          {shownLogs.map((line) => (
            <li key={line.n} data-file={line.file}>
              <span class="log-file">{line.file}</span> {line.line}
            </li>
          ))}
        </ol>
      </div>
    </section>
  );
}

export function EventList({ events }: { events: readonly RunEvent[] }) {
  return (
    <Section id="events" title="Events">
      <ol class="events" data-testid="events">
        {events.slice(-200).map((event) => (
          <li data-kind={event.kind} key={event.seq}>
            <span class="muted">#{event.seq}</span> <time dateTime={event.at}>{new Date(event.at).toLocaleTimeString()}</time> {eventText(event)}
          </li>
        ))}
      </ol>
    </Section>
  );
}
