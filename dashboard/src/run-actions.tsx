/** What an operator does on a run's page: answer its questions, cancel it, extend or stop its budget. */
import { useState } from 'preact/hooks';
import { api } from './api';
import type { LandingView } from './model';
import { describe } from './run-parts';

export function Questions({ id, questions, onAnswered }: { id: string; questions: LandingView['pendingQuestions']; onAnswered: () => void }) {
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

export function Actions({ id, kind, paused, onDone }: { id: string; kind: string; paused: string | undefined; onDone: () => void }) {
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
      <input
        id={`budget-${name}`}
        type="number"
        min="0"
        step={step}
        inputMode="decimal"
        value={budget[name]}
        onInput={(event) => setBudget({ ...budget, [name]: event.currentTarget.value })}
      />
    </div>
  );
  return (
    <section aria-labelledby="actions-title" data-section="actions">
      <h2 id="actions-title">Actions</h2>
      {kind === 'landing' ? (
        <div class="actions">
          {confirming ? (
            <>
              <button
                type="button"
                class="danger"
                onClick={() => void act('Cancel requested: its containers stop and cleanup runs.', () => api('POST', `/v1/landings/${id}/cancel`))}
              >
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
