import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value';
import { fieldName } from '../../core/gate-file';

const tokens = (description: string) => Type.Integer({ minimum: 0, description });

/**
 * What the model reports for one answer. The four counts are disjoint (Anthropic's convention);
 * the OpenAI renderers report `inputTokens + cacheReadTokens + cacheWriteTokens` as input tokens,
 * of which `cacheReadTokens` are "cached" (OpenAI's convention). See README.md.
 */
export const UsageSchema = Type.Object(
  {
    inputTokens: tokens('uncached input tokens'),
    outputTokens: tokens('output tokens'),
    cacheReadTokens: Type.Optional(tokens('input tokens read from the prompt cache; default 0')),
    cacheWriteTokens: Type.Optional(tokens('input tokens written to the prompt cache; default 0')),
  },
  { additionalProperties: false },
);

export const ToolCallSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, description: 'a tool the request declares: Bash, Edit, mcp__tarmac__read_file, exec_command, …' }),
    input: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'the arguments, a JSON object; default {}' })),
    text: Type.Optional(Type.String({ description: 'free-form input, for OpenAI custom tools (codex apply_patch) only' })),
  },
  { additionalProperties: false },
);

const TurnSchema = Type.Object(
  {
    text: Type.Optional(Type.String({ description: 'the text the model says; a turn without tool calls is a final answer' })),
    toolCalls: Type.Optional(Type.Array(ToolCallSchema, { minItems: 1 })),
    usage: UsageSchema,
  },
  { additionalProperties: false },
);

const ConversationSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, description: 'shown in errors and request records; default "#<index>"' })),
    match: Type.Optional(
      Type.String({ minLength: 1, description: 'chooses this conversation when the text occurs in the system prompt or an opening user message' }),
    ),
    turns: Type.Array(TurnSchema, { minItems: 1 }),
  },
  { additionalProperties: false },
);

const SideCallsSchema = Type.Object(
  {
    detect: Type.Optional(Type.Union([Type.Literal('no-tools'), Type.Literal('never')], { description: 'one of "no-tools", "never"; default "no-tools"' })),
    text: Type.Optional(Type.String({ description: 'default "Scripted session"' })),
    usage: Type.Optional(UsageSchema),
  },
  { additionalProperties: false },
);

export const ScriptSchema = Type.Object(
  {
    version: Type.Literal(1),
    conversations: Type.Array(ConversationSchema, { minItems: 1 }),
    sideCalls: Type.Optional(SideCallsSchema),
  },
  { additionalProperties: false },
);

export type Script = Static<typeof ScriptSchema>;
export type ScriptToolCall = Static<typeof ToolCallSchema>;
export type ScriptUsage = Static<typeof UsageSchema>;

export class ScriptError extends Error {
  constructor(
    readonly source: string,
    readonly field: string,
    detail: string,
  ) {
    super(`${source}: ${field} ${detail}`);
    this.name = 'ScriptError';
  }
}

function describe(error: ValueError): string {
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties: {
      const allowed = Object.keys((error.schema as { properties?: object }).properties ?? {});
      return `is not a known field (valid fields: ${allowed.join(', ')})`;
    }
    case ValueErrorType.ObjectRequiredProperty:
      return 'is required';
    default: {
      const hint = (error.schema as { description?: string }).description;
      return `${error.message.toLowerCase()}${hint ? ` (${hint})` : ''}`;
    }
  }
}

/** Checks what the schema cannot say: every turn answers something, a tool call has one kind of input. */
function checkTurns(script: Script, source: string): void {
  script.conversations.forEach((conversation, c) => {
    conversation.turns.forEach((turn, t) => {
      const at = `conversations[${c}].turns[${t}]`;
      if (turn.text === undefined && turn.toolCalls === undefined) throw new ScriptError(source, at, 'must have text, toolCalls or both');
      turn.toolCalls?.forEach((call, i) => {
        if (call.input !== undefined && call.text !== undefined) throw new ScriptError(source, `${at}.toolCalls[${i}]`, 'must have input or text, not both');
      });
    });
  });
}

/** Validates parsed script data; `source` names it in errors (a file path, or "script"). */
export function parseScript(data: unknown, source = 'script'): Script {
  const first = Value.Errors(ScriptSchema, data).First();
  if (first) throw new ScriptError(source, fieldName(first.path), describe(first));
  const script = data as Script;
  checkTurns(script, source);
  return script;
}

/** Reads and validates a script file. */
export function loadScript(path: string): Script {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ScriptError(path, '(root)', `is not readable JSON: ${(error as Error).message}`);
  }
  return parseScript(data, path);
}
