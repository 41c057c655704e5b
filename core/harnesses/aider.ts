import { containerPaths, withPrompt, type HarnessAdapter } from './types';

const scale = { '': 1, k: 1_000, m: 1_000_000 } as const;

function tokens(amount: string, suffix: string): number {
  return Math.round(Number(amount.replace(/,/g, '')) * scale[suffix.toLowerCase() as keyof typeof scale]);
}

/**
 * Aider: one message, non-interactive, committing its own edits. It prints plain
 * text; usage comes from its report lines,
 * `Tokens: 12k sent, 1.2k received. Cost: $0.04 message, $0.10 session.`
 */
export const aider: HarnessAdapter = {
  output: 'stdout',
  command: (model) =>
    withPrompt(
      `aider --model "$1" --message-file ${containerPaths.prompt} --yes-always --no-stream --no-pretty --no-check-update --no-show-release-notes --analytics-disable --auto-commits`,
      model,
    ),
  parse(stdout) {
    const pattern = /Tokens:\s*([\d.,]+)([kKmM]?)\s*sent,\s*([\d.,]+)([kKmM]?)\s*received\.(?:\s*Cost:\s*\$([\d.]+)\s*message,\s*\$([\d.]+)\s*session\.)?/g;
    let inputTokens = 0;
    let outputTokens = 0;
    let sessionCost: number | undefined;
    let messageCosts = 0;
    let seen = false;
    for (const match of stdout.matchAll(pattern)) {
      seen = true;
      inputTokens += tokens(match[1]!, match[2]!);
      outputTokens += tokens(match[3]!, match[4]!);
      if (match[5]) messageCosts += Number(match[5]);
      if (match[6]) sessionCost = Number(match[6]);
    }
    if (!seen) return { ok: false, problem: 'aider printed no token report' };
    const failed = /^(litellm\.\w*Error|Error:|API Error)/m.test(stdout);
    const lines = stdout
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('Tokens:'));
    return {
      ok: true,
      result: {
        status: failed ? 'error' : 'ok',
        summary: lines.slice(-5).join('\n'),
        usage: { inputTokens, outputTokens, costUsd: sessionCost ?? messageCosts },
      },
    };
  },
};
