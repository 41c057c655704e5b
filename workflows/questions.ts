import { condition, getExternalWorkflowHandle, setHandler, workflowInfo } from '@temporalio/workflow';
import type { RunEventBody } from '../core/events';
import { answerSignal, answerUpdate, runEventSignal } from '../core/messages';
import type { ConversationRef, SessionOutcome } from '../core/session-types';
import type { Question } from '../core/types';
import type { RunJournal } from './run-journal';

/** What came of a question: the answer's text (trimmed; empty is a decision not to go on), or no answer in time. */
type Answered = { answer: string } | { timedOut: true; waitedMs: number };

type QuestionEvent = Extract<RunEventBody, { kind: 'question' }>;

/**
 * The questions a run waits on — its own and those of the child workflows working for it.
 *
 * Questions first, from anyone: a workflow that must ask (a landing about its gate file, a landing
 * or a fix loop whose agent asked) calls `ask`, which records the question in the run's status and
 * journal and waits for the `answer` update. A child's question is reported to the run it works for
 * (`reportTo`), which shows it as pending with the child as its owner; an answer given to the run is
 * forwarded to the owner (the `answerQuestion` signal), and an answer given to the child directly is
 * reported back, so both show the same state.
 */
export class QuestionDesk {
  readonly questions: Question[] = [];

  constructor(
    private readonly journal: RunJournal,
    /** The run this workflow works for (its journal and status show this workflow's questions too). */
    private readonly reportTo?: string,
  ) {}

  pending(): Question[] {
    return this.questions.filter((entry) => entry.answer === undefined && !entry.withdrawn);
  }

  /**
   * A child that asked has ended (its outcome says how: answered, declined, out of wait): its
   * questions still pending here are withdrawn — nobody waits for their answers any more.
   */
  withdraw(owner: string): void {
    for (const question of this.pending().filter((entry) => entry.owner === owner)) {
      question.withdrawn = true;
      const { owner: _owner, answer: _answer, withdrawn: _withdrawn, ...shown } = question;
      this.journal.record({ kind: 'question', ...shown, withdrawn: true });
    }
  }

  /** Asks and waits for the answer, or (with `waitMs`) until the wait limit passes. */
  async ask(question: Omit<Question, 'answer' | 'owner'>, waitMs?: number): Promise<Answered> {
    this.questions.push({ ...question });
    this.journal.record({ kind: 'question', ...question });
    await this.report({ kind: 'question', ...question });
    const answered = () => this.find(question.id)?.answer !== undefined;
    if (waitMs === undefined) await condition(answered);
    else if (!(await condition(answered, waitMs))) return { timedOut: true, waitedMs: waitMs };
    return { answer: this.find(question.id)!.answer! };
  }

  /** An answer to one of this workflow's own questions (from the update, or forwarded by the run). */
  answer(id: string, text: string): void {
    const question = this.find(id);
    if (!question || question.answer !== undefined || question.withdrawn) return;
    question.answer = text;
    const { answer: _answer, owner: _owner, ...asked } = question;
    this.journal.record({ kind: 'question', ...asked, answer: text });
    void this.report({ kind: 'question', ...asked, answer: text });
  }

  /** A child's question (or its answer) reported to this run: shown here; answers given here go to the child. */
  adopt(event: QuestionEvent & { owner: string }, key: string): void {
    const known = this.find(event.id);
    if (event.answer === undefined) {
      if (known) return;
      const { kind: _kind, ...question } = event;
      this.questions.push(question);
    } else {
      if (!known || known.answer !== undefined || known.withdrawn) return;
      known.answer = event.answer;
    }
    const { owner: _owner, ...shown } = event;
    this.journal.record(shown, key);
  }

  /**
   * The `answer` update (one text for the oldest pending question, or the one `questionId` names)
   * and the `answerQuestion` signal a run forwards to the child that asked.
   */
  install(): void {
    setHandler(
      answerUpdate,
      async ({ questionId, text }) => {
        const question = this.pending().find((entry) => !questionId || entry.id === questionId)!;
        const answer = text.trim();
        // A child's question: the child waits for it, so it hears first; then this run shows it answered.
        if (question.owner) await getExternalWorkflowHandle(question.owner).signal(answerSignal, { questionId: question.id, text: answer });
        if (question.owner)
          this.adopt({ kind: 'question', id: question.id, question: question.question, owner: question.owner, answer }, `answered:${question.id}`);
        else this.answer(question.id, answer);
        return { accepted: true as const, questionId: question.id };
      },
      {
        validator: ({ questionId, text }) => {
          if (typeof text !== 'string' || text.length > 10_000) throw new Error('text must be a string of at most 10000 characters');
          const pending = this.pending();
          if (pending.length === 0) throw new Error('the run has no pending question');
          if (questionId && !pending.some((entry) => entry.id === questionId)) throw new Error(`no pending question ${questionId}`);
        },
      },
    );
    setHandler(answerSignal, ({ questionId, text }) => this.answer(questionId, text.trim()));
  }

  private find(id: string): Question | undefined {
    return this.questions.find((entry) => entry.id === id);
  }

  /** Tells the run this workflow works for (its journal key makes a repeated report harmless). */
  private async report(event: QuestionEvent): Promise<void> {
    if (!this.reportTo) return;
    const owner = workflowInfo().workflowId;
    const key = `${event.answer === undefined ? 'asked' : 'answered'}:${event.id}`;
    await getExternalWorkflowHandle(this.reportTo)
      .signal(runEventSignal, { ...event, owner, key })
      .catch(() => undefined);
  }
}

/**
 * The message that hands an agent the answers to its questions: the follow-up session's first
 * words, before its task. Each answer sits on a line of its own after `Answer from the operator:`.
 */
export function answersMessage(asked: readonly { question: string; answer: string }[]): string {
  return [
    'You asked, and the operator answered:',
    ...asked.flatMap(({ question, answer }, index) => [`${index + 1}. ${question}`, `Answer from the operator: ${answer}`]),
    'Go on with your task with these answers.',
  ].join('\n');
}

/** Who asked, as a question shows it: the session, its role and its harness#model. */
export function askedBy(outcome: { sessionId: string; role: string; harnessModel: string }): string {
  return `${outcome.sessionId} (${outcome.role}, ${outcome.harnessModel})`;
}

/** What came of an agent's questions: the follow-up that carries the answers, or why the run does not go on. */
type AgentAnswers =
  | { followUp: { continues?: ConversationRef; message: string } }
  | { declined: Pick<Question, 'id' | 'question' | 'from'> }
  | { unanswered: Pick<Question, 'id' | 'question' | 'from'>; waitedMs: number };

/**
 * Questions first: an agent's questions, asked one by one before any more agent time is spent.
 * The follow-up hands the answers to the session that asked (reuse first: it continues that
 * conversation); an empty answer declines (a decision not to go on); none within `waitMs` is unanswered.
 */
export async function askAgent(desk: QuestionDesk, asked: SessionOutcome, why: string, waitMs?: number): Promise<AgentAnswers> {
  const from = askedBy(asked);
  const answers: { question: string; answer: string }[] = [];
  for (const [index, question] of (asked.result?.questions ?? []).entries()) {
    const id = `${asked.sessionId}-q${index + 1}`;
    const got = await desk.ask({ id, question, from, why }, waitMs);
    if ('timedOut' in got) return { unanswered: { id, question, from }, waitedMs: got.waitedMs };
    if (got.answer === '') return { declined: { id, question, from } };
    answers.push({ question, answer: got.answer });
  }
  const attempt = asked.attempts.at(-1);
  const continues = attempt ? { sessionId: asked.sessionId, attempt: attempt.attempt, harnessModel: attempt.harnessModel } : undefined;
  return { followUp: { ...(continues ? { continues } : {}), message: answersMessage(answers) } };
}

/** Why a run stops on an agent's question that got no decision to go on: the summary of its needs-decision outcome. */
export function undecided(answers: Exclude<AgentAnswers, { followUp: unknown }>): { summary: string; message: string } {
  const { id, question, from } = 'declined' in answers ? answers.declined : answers.unanswered;
  return 'declined' in answers
    ? { summary: `the answer to ${from ?? 'the'} question ${id} was empty: a decision not to go on`, message: `question ${id} answered empty: ${question}` }
    : {
        summary: `no answer to ${from ?? 'the'} question ${id} within ${Math.round(answers.waitedMs / 1000)} s (the recipe's limits.questions.wait)`,
        message: `no answer to question ${id} within ${Math.round(answers.waitedMs / 1000)} s: ${question}`,
      };
}
