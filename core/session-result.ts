import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { fieldName } from './gate-file';

const UsageSchema = Type.Object({
  inputTokens: Type.Integer({ minimum: 0 }),
  outputTokens: Type.Integer({ minimum: 0 }),
  costUsd: Type.Number({ minimum: 0 }),
});

export const FindingSchema = Type.Object({
  file: Type.String(),
  line: Type.Optional(Type.Integer({ minimum: 0 })),
  severity: Type.Union([Type.Literal('blocking'), Type.Literal('major'), Type.Literal('minor'), Type.Literal('info')]),
  message: Type.String(),
  rule: Type.Optional(Type.String()),
});

/** `/tarmac/out/result.json`, the agent container contract's one output. */
export const SessionResultSchema = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('no-change'), Type.Literal('error'), Type.Literal('blocked')]),
  summary: Type.String({ maxLength: 20_000 }),
  findings: Type.Optional(Type.Array(FindingSchema, { maxItems: 1000 })),
  usage: UsageSchema,
  questions: Type.Optional(Type.Array(Type.String({ maxLength: 4000 }), { maxItems: 20 })),
  /** Commits the agent says it dropped on purpose (resolver), with reasons. */
  droppedCommits: Type.Optional(Type.Array(Type.Object({ sha: Type.String(), reason: Type.String() }))),
});

export type SessionResult = Static<typeof SessionResultSchema>;
export type Finding = Static<typeof FindingSchema>;

/** Validates a parsed result; `undefined` result means the session did not deliver. */
export function checkSessionResult(data: unknown): { ok: true; result: SessionResult } | { ok: false; problem: string } {
  const first = Value.Errors(SessionResultSchema, data).First();
  if (first) return { ok: false, problem: `result.json: ${fieldName(first.path)} ${first.message.toLowerCase()}` };
  return { ok: true, result: data as SessionResult };
}

/** The structured part a CLI agent puts at the end of its final message (its result.json, in effect). */
const ResultBlockSchema = Type.Object(
  {
    findings: Type.Optional(Type.Array(FindingSchema, { maxItems: 1000 })),
    questions: Type.Optional(Type.Array(Type.String({ maxLength: 4000 }), { maxItems: 20 })),
    droppedCommits: Type.Optional(Type.Array(Type.Object({ sha: Type.String(), reason: Type.String() }))),
  },
  { additionalProperties: false },
);
type ResultBlock = Static<typeof ResultBlockSchema>;

/** The fence a CLI agent's block opens with. */
export const resultFence = 'tarmac-result';

/**
 * Reads the last ```tarmac-result fenced block of a CLI agent's final message: its findings,
 * questions and declared drops, checked like result.json; the summary is the text without it.
 * No block → no fields (`found: false`); a block that does not parse or check → a problem.
 */
export function readResultBlock(message: string): { ok: true; found: boolean; fields: ResultBlock; summary: string } | { ok: false; problem: string } {
  const blocks = [...message.matchAll(new RegExp(String.raw`\`\`\`${resultFence}[ \t]*\r?\n([\s\S]*?)\r?\n?\`\`\``, 'g'))];
  const last = blocks.at(-1);
  if (!last) return { ok: true, found: false, fields: {}, summary: message };
  let data: unknown;
  try {
    data = JSON.parse(last[1]!);
  } catch (error) {
    return { ok: false, problem: `the ${resultFence} block is not valid JSON: ${(error as Error).message}` };
  }
  const first = Value.Errors(ResultBlockSchema, data).First();
  if (first) return { ok: false, problem: `the ${resultFence} block: ${fieldName(first.path) || '(the block)'} ${first.message.toLowerCase()}` };
  const summary = (message.slice(0, last.index) + message.slice(last.index + last[0].length)).trim();
  return { ok: true, found: true, fields: data as ResultBlock, summary };
}
