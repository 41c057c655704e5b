/**
 * A run's page: what it is doing (phase timeline, step graph, gate rounds, environments, panels, sessions,
 * fix loops, meters against the budget), what it waits on (questions, a paused budget), what
 * it prints (the live log) and what an operator can do (answer, cancel, extend or stop the budget).
 * Live through the run's event stream (run-state.ts); each section is its own component
 * (run-sections.tsx, run-panels.tsx, run-actions.tsx).
 */
import { useState } from 'preact/hooks';
import { EnvironmentUses } from './environments';
import type { LandingView } from './model';
import { Actions, Questions } from './run-actions';
import { BatchLineageSection, OtherRun, ReviewPanel } from './run-panels';
import { Section } from './run-parts';
import { EventList, FixLoops, GateRounds, LiveLog, MetersAndBudget, PhaseTimeline, RunHeader, SessionTable, StepList } from './run-sections';
import { useRunState } from './run-state';

export function RunPage({ id }: { id: string }) {
  const { run, landing, loadError, events, logs, stream, ended, finished, outcome, sessions, load } = useRunState(id);
  const [logFile, setLogFile] = useState<string>('');

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
  const reviews = landing?.reviews ?? [];

  return (
    <>
      <RunHeader id={id} run={run} landing={landing} outcome={outcome} loadError={loadError} />

      {pending.length > 0 ? <Questions id={id} questions={pending} onAnswered={() => void load()} /> : null}
      {running ? <Actions id={id} kind={run.type} paused={landing?.pausedFor} onDone={() => void load()} /> : null}

      {landing ? (
        <>
          <PhaseTimeline events={events} finished={finished} outcome={outcome} />
          <StepList landing={landing} outcome={outcome} events={events} />
          <GateRounds landing={landing} outcome={outcome} showLog={showLog} />
          <EnvironmentUses uses={outcome?.environments} />
          <BatchLineageSection id={id} outcome={outcome} />
          {reviews.length > 0 ? (
            <Section id="reviews" title="Review panels">
              {reviews.map((review, index) => (
                <ReviewPanel review={review} index={index} />
              ))}
            </Section>
          ) : null}
          {outcome?.fixLoops?.length ? <FixLoops loops={outcome.fixLoops} /> : null}
        </>
      ) : (
        <Section id="status" title="Status">
          <OtherRun run={run} />
        </Section>
      )}

      <SessionTable rows={sessions} />
      {landing ? <MetersAndBudget landing={landing} /> : null}
      <LiveLog logs={logs} stream={stream} logFile={logFile} setLogFile={setLogFile} />
      <EventList events={events} />
    </>
  );
}
