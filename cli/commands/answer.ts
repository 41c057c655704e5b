import { ExitCode } from '../errors';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';

/** `tarmac answer <id> <text> [--question <qid>]`: an empty text stops the landing (needs-decision). */
export async function answerCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const parsed = parseCommand('answer', args, { question: { type: 'string' } });
  const [id, text] = positionals('answer', parsed.positionals, ['id', 'text']);
  const result = await context.client().answer(id!, text!, parsed.values.question);
  writeLines(context.stdout, [
    text === ''
      ? `empty answer to ${result.questionId} accepted: landing ${id} stops with needs-decision`
      : `answer to ${result.questionId} accepted: landing ${id} continues`,
  ]);
  return ExitCode.ok;
}
