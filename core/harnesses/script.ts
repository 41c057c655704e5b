import { splitScriptModel } from '../script-scenario';
import type { HarnessAdapter } from './types';

/**
 * The deterministic agents of tarmac/agent-script: the model is the behaviour; they write result.json.
 * A scenario the model names (`fixer:<scenario>`) is the worker's data, merged into the task file,
 * so the container is given the behaviour alone.
 */
export const script: HarnessAdapter = {
  output: 'result-file',
  command: (model) => [splitScriptModel(model).behaviour],
  parse: () => ({ ok: false, problem: 'script agents deliver through result.json' }),
};
