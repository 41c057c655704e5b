import { ExitCode } from '../errors';
import { classifyApproval, gateFileApprovals } from '../../policies/gate-file-change';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';

/** The id of a landing's own question about a change of its gate file (workflows/landing/steps.ts). */
const isGateFileQuestion = (questionId: string) => /^gate-file-edit(-\d+)?$/.test(questionId);

/**
 * `tarmac answer <id> <text> [--question <qid>]` (POST /v1/runs/:id/answers). A landing's gate-file
 * question goes on only with `approve`, `approved` or `yes`; an agent's question gets the text as its
 * answer. An empty text is a decision not to go on (needs-decision).
 */
export async function answerCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('answer', args, { question: { type: 'string' } });
  const [id, text] = positionals('answer', parsed.positionals, ['id', 'text']);
  const result = await context.client().answer(id!, text!, parsed.values.question);
  const meaning = classifyApproval(text!);
  const what = isGateFileQuestion(result.questionId) ? 'landing' : 'run';
  writeLines(context.stdout, [
    meaning === 'empty'
      ? `empty answer to ${result.questionId} accepted: ${what} ${id} stops with needs-decision`
      : what === 'run'
        ? `answer to ${result.questionId} accepted: the agent that asked goes on with it (run ${id})`
        : meaning === 'approved'
          ? `answer to ${result.questionId} accepted: landing ${id} continues`
          : `answer to ${result.questionId} accepted, but it is not an approval (${gateFileApprovals.join(', ')}): landing ${id} stops with needs-decision`,
  ]);
  return ExitCode.ok;
}
