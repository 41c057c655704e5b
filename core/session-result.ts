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
export type Usage = Static<typeof UsageSchema>;
export type Finding = Static<typeof FindingSchema>;

export const zeroUsage: Usage = { inputTokens: 0, outputTokens: 0, costUsd: 0 };

/** Validates a parsed result; `undefined` result means the session did not deliver. */
export function checkSessionResult(data: unknown): { ok: true; result: SessionResult } | { ok: false; problem: string } {
  const first = Value.Errors(SessionResultSchema, data).First();
  if (first) return { ok: false, problem: `result.json: ${fieldName(first.path)} ${first.message.toLowerCase()}` };
  return { ok: true, result: data as SessionResult };
}
