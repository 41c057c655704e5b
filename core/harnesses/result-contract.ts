import type { SessionRole } from '../session-types';
import { resultFence } from '../session-result';

/**
 * What a CLI agent is told, after its task, about how to hand back structured results: a fenced
 * block at the end of its final message (the script agents write result.json instead). A reviewer
 * must give one — a reviewer whose findings cannot be read has not delivered (never "no findings").
 */
export function resultContract(role: SessionRole): string {
  const example =
    role === 'reviewer' ? '{"findings": [{"file": "src/a.js", "line": 3, "severity": "blocking", "message": "…"}]}' : '{"questions": [], "droppedCommits": []}';
  const what =
    role === 'reviewer'
      ? 'End your final message with your findings as JSON in a fenced block (an empty list when you found nothing). Each finding has file, line, severity (blocking, major, minor or info) and message.'
      : 'If you must ask a question before going on, or had to drop a commit, end your final message with a fenced block saying so (questions: strings; droppedCommits: sha and reason). Otherwise no block is needed.';
  return ['', '---', what, `\`\`\`${resultFence}`, example, '```'].join('\n');
}
