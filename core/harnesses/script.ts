import type { HarnessAdapter } from './types';

/** The deterministic agents of tarmac/agent-script: the model is the behaviour; they write result.json. */
export const script: HarnessAdapter = {
  output: 'result-file',
  command: (model) => [model],
  parse: () => ({ ok: false, problem: 'script agents deliver through result.json' }),
};
