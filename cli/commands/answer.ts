import { ExitCode } from '../errors';
import { classifyApproval, gateFileApprovals } from '../../policies/gate-file-change';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';

/**
 * `tarmac answer <id> <text> [--question <qid>]`. A landing's questions are about changes of
 * its gate file: only `approve`, `approved` or `yes` let it go on; an empty or any other
 * text stops it (needs-decision).
 */
export async function answerCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('answer', args, { question: { type: 'string' } });
  const [id, text] = positionals('answer', parsed.positionals, ['id', 'text']);
  const result = await context.client().answer(id!, text!, parsed.values.question);
  const meaning = classifyApproval(text!);
  writeLines(context.stdout, [
    meaning === 'empty'
      ? `empty answer to ${result.questionId} accepted: landing ${id} stops with needs-decision`
      : meaning === 'approved'
        ? `answer to ${result.questionId} accepted: landing ${id} continues`
        : `answer to ${result.questionId} accepted, but it is not an approval (${gateFileApprovals.join(', ')}): landing ${id} stops with needs-decision`,
  ]);
  return ExitCode.ok;
}
