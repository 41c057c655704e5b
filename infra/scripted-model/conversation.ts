import type { Script, ScriptToolCall, ScriptUsage } from './script';

/** What the scripted model needs to know about one request, whatever its protocol. */
export interface RequestView {
  model: string;
  stream: boolean;
  /** System prompt / instructions and the user's text before the first model turn: what `match` searches. */
  openingText: string;
  /** How many model turns the history already holds (runs of assistant output); the next turn's index. */
  modelTurns: number;
  /** The tools the request declares, by the name a call must use. */
  declaredTools: readonly string[];
  /**
   * Responses only: tools codex declares inside a namespace (its MCP servers: namespace `mcp__tarmac`,
   * tool `read_file`) are declared as `<namespace>__<tool>`, the name Claude Code gives them too; a call
   * carries the two apart.
   */
  namespacedTools?: ReadonlyMap<string, { namespace: string; name: string }>;
  /** Chat Completions only: the stream ends with a usage chunk (`stream_options.include_usage`), as OpenAI's does. */
  streamUsage?: boolean;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export interface AnswerToolCall extends ScriptToolCall {
  /** Stable per conversation, turn and position, so a test can follow a call to its result. */
  id: string;
}

/** One model answer, protocol-neutral; each renderer turns it into its wire format. */
export interface Answer {
  text?: string;
  toolCalls: AnswerToolCall[];
  usage: Usage;
}

type Resolution =
  | { kind: 'turn'; conversation: string; turn: number; answer: Answer }
  | { kind: 'side'; answer: Answer }
  | { kind: 'refused'; conversation?: string; turn?: number; message: string };

const defaultSideText = 'Scripted session';

function fullUsage(usage: ScriptUsage | undefined): Usage {
  return {
    inputTokens: usage?.inputTokens ?? 0,
    outputTokens: usage?.outputTokens ?? 0,
    cacheReadTokens: usage?.cacheReadTokens ?? 0,
    cacheWriteTokens: usage?.cacheWriteTokens ?? 0,
  };
}

function chooseConversation(script: Script, openingText: string): number {
  const matched = script.conversations.findIndex((c) => c.match !== undefined && openingText.includes(c.match));
  return matched >= 0 ? matched : script.conversations.findIndex((c) => c.match === undefined);
}

/**
 * Decides the answer to one request. Stateless on purpose: the turn is the number of model turns
 * already in the history, so a retried request gets the same answer again, and a follow-up message
 * in a resumed conversation continues the script where it was.
 */
export function resolveTurn(script: Script, view: RequestView): Resolution {
  const side = script.sideCalls;
  if ((side?.detect ?? 'no-tools') === 'no-tools' && view.declaredTools.length === 0) {
    return { kind: 'side', answer: { text: side?.text ?? defaultSideText, toolCalls: [], usage: fullUsage(side?.usage) } };
  }
  const index = chooseConversation(script, view.openingText);
  const conversation = script.conversations[index];
  if (!conversation) {
    const keys = script.conversations.map((c) => JSON.stringify(c.match)).join(', ');
    return { kind: 'refused', message: `scripted model: no conversation of the script matches this request (match strings: ${keys}; none is a default)` };
  }
  const name = conversation.name ?? `#${index}`;
  const turn = conversation.turns[view.modelTurns];
  if (!turn) {
    return {
      kind: 'refused',
      conversation: name,
      turn: view.modelTurns,
      message: `scripted model: conversation ${name} has ${conversation.turns.length} turn(s); the request asks for turn ${view.modelTurns + 1}`,
    };
  }
  const toolCalls = (turn.toolCalls ?? []).map((call, position) => ({ ...call, id: `scripted_${index}_${view.modelTurns}_${position}` }));
  const undeclared = toolCalls.find((call) => !view.declaredTools.includes(call.name));
  if (undeclared) {
    return {
      kind: 'refused',
      conversation: name,
      turn: view.modelTurns,
      message: `scripted model: conversation ${name} turn ${view.modelTurns + 1} calls tool "${undeclared.name}", which the request does not declare (declared: ${view.declaredTools.join(', ') || 'none'})`,
    };
  }
  return {
    kind: 'turn',
    conversation: name,
    turn: view.modelTurns,
    answer: { ...(turn.text === undefined ? {} : { text: turn.text }), toolCalls, usage: fullUsage(turn.usage) },
  };
}

/** Counts the runs of model output in a history: consecutive model items are one turn. */
export function countModelTurns(items: readonly unknown[], isModelItem: (item: unknown) => boolean): number {
  let turns = 0;
  let inRun = false;
  for (const item of items) {
    const model = isModelItem(item);
    if (model && !inRun) turns += 1;
    inRun = model;
  }
  return turns;
}
