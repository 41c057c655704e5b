import type { ModelProvider } from '../model-pricing';
import type { AdapterName } from '../recipe-schemas';
import { aider } from './aider';
import { claudeCode } from './claude-code';
import { codex } from './codex';
import { opencode } from './opencode';
import { script } from './script';
import type { HarnessAdapter } from './types';

export const adapters: Record<AdapterName, HarnessAdapter> = {
  script,
  'claude-code': claudeCode,
  opencode,
  codex,
  aider,
};

/**
 * Which provider protocol a CLI harness speaks for a model (the provider of its model
 * gateway); undefined for the script harness, which calls no model.
 */
export function modelProviderOf(adapter: AdapterName, model: string): ModelProvider | undefined {
  switch (adapter) {
    case 'script':
      return undefined;
    case 'claude-code':
      return 'anthropic';
    case 'codex':
      return 'openai';
    default:
      // opencode names the provider in the model ("anthropic/claude-…"); aider's Claude aliases are Anthropic.
      return /^(anthropic\/|claude|sonnet|opus|haiku)/.test(model) ? 'anthropic' : 'openai';
  }
}
