import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { answersMessage, askedBy, QuestionDesk, undecided } from '../../workflows/questions';
import { RunJournal } from '../../workflows/run-journal';

/**
 * The question desk's bookkeeping outside a workflow: what a run shows of its children's questions
 * (adopted with their owner), answers, withdrawal when the child ends. Asking itself waits on the
 * workflow's `condition`: the e2e tests (landing-doctrine, lost-host) cover it.
 */
describe('QuestionDesk: a run shows its children’s questions, and forgets none', () => {
  const asked = {
    kind: 'question' as const,
    id: 'fixup-1-implementer-1-q1',
    question: 'yes or no?',
    from: 'fixup-1-implementer-1 (implementer, script#fixer)',
    why: 'round 1',
    owner: 'land.x.fixup-1',
  };

  it('a child’s question is pending here with its owner; a repeated report is recorded once; its answer clears it', () => {
    const journal = new RunJournal();
    const desk = new QuestionDesk(journal);
    desk.adopt(asked, 'asked:fixup-1-implementer-1-q1');
    desk.adopt(asked, 'asked:fixup-1-implementer-1-q1');
    assert.deepEqual(
      desk.pending().map(({ id, owner }) => ({ id, owner })),
      [{ id: asked.id, owner: 'land.x.fixup-1' }],
    );
    desk.adopt({ ...asked, answer: 'yes' }, 'answered:fixup-1-implementer-1-q1');
    assert.deepEqual(desk.pending(), []);
    assert.deepEqual(
      journal.page().events.map((event) => (event.kind === 'question' ? [event.id, event.answer ?? null, 'owner' in event] : event.kind)),
      [
        [asked.id, null, false],
        [asked.id, 'yes', false],
      ],
      'shown once asked, once answered, never with the owner (the journal is what clients see)',
    );
  });

  it('the child ends without an answer: its questions are withdrawn; other owners’ stay', () => {
    const journal = new RunJournal();
    const desk = new QuestionDesk(journal);
    desk.adopt(asked, 'a1');
    desk.adopt({ ...asked, id: 'review-q1', owner: 'land.x.review-1' }, 'a2');
    desk.withdraw('land.x.fixup-1');
    assert.deepEqual(
      desk.pending().map((question) => question.id),
      ['review-q1'],
    );
    const last = journal.page().events.at(-1)!;
    assert.deepEqual(last.kind === 'question' && { id: last.id, withdrawn: last.withdrawn }, { id: asked.id, withdrawn: true });
    desk.adopt({ ...asked, answer: 'late' }, 'answered:late');
    assert.equal(desk.questions.find((question) => question.id === asked.id)!.answer, undefined, 'a withdrawn question takes no late answer');
  });

  it('its own question answered here: trimmed text recorded; a second answer is ignored', () => {
    const journal = new RunJournal();
    const desk = new QuestionDesk(journal);
    desk.questions.push({ id: 'gate-file-edit', question: 'approve?' });
    desk.answer('gate-file-edit', 'approve');
    desk.answer('gate-file-edit', 'no');
    assert.equal(desk.questions[0]!.answer, 'approve');
    assert.deepEqual(desk.pending(), []);
  });
});

describe('the words around an agent’s questions', () => {
  it('who asked: the session, its role and its harness#model', () =>
    assert.equal(askedBy({ sessionId: 'resolver-1', role: 'resolver', harnessModel: 'claude-code#sonnet' }), 'resolver-1 (resolver, claude-code#sonnet)'));
  it('the follow-up message: each question with its answer on a line of its own', () =>
    assert.equal(
      answersMessage([
        { question: 'Keep which?', answer: 'both' },
        { question: 'Order?', answer: 'target first' },
      ]),
      'You asked, and the operator answered:\n1. Keep which?\nAnswer from the operator: both\n2. Order?\nAnswer from the operator: target first\nGo on with your task with these answers.',
    ));
  const question = { id: 'resolver-1-q1', question: 'Keep which?', from: 'resolver-1 (resolver, script#resolver)' };
  const table = [
    {
      name: 'declined',
      answers: { declined: question },
      summary: 'the answer to resolver-1 (resolver, script#resolver) question resolver-1-q1 was empty: a decision not to go on',
    },
    {
      name: 'out of wait',
      answers: { unanswered: question, waitedMs: 3000 },
      summary: "no answer to resolver-1 (resolver, script#resolver) question resolver-1-q1 within 3 s (the recipe's limits.questions.wait)",
    },
  ];
  for (const { name, answers, summary } of table) it(`undecided: ${name}`, () => assert.equal(undecided(answers).summary, summary));
});
