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

export type { HarnessAdapter } from './types';
