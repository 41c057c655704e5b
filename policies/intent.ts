/**
 * Intent routing of a fix request: a boot, build or test fix goes to an implementer;
 * a design question to an architect. Pure; the first matching rule wins.
 */
import type { Intent } from '../core/fix-types';

const rules: { intent: Intent; pattern: RegExp }[] = [
  { intent: 'design-question', pattern: /\b(should (we|i)|design|architecture|approach|trade-?offs?|which (library|pattern)|how should)\b/i },
  { intent: 'boot-fix', pattern: /\b(start(s|ing)?|boot(s|ing)?|run(s|ning)? locally|dev server|up\b|launch|serve)\b/i },
  { intent: 'build-fix', pattern: /\b(build|compile|typecheck|type-check|bundle|lint)\b/i },
  { intent: 'test-fix', pattern: /\b(tests?|spec|failing|assert|suite)\b/i },
];

export function classifyIntent(request: string): Intent {
  return rules.find((rule) => rule.pattern.test(request))?.intent ?? 'other-fix';
}

export function roleFor(intent: Intent): 'implementer' | 'architect' {
  return intent === 'design-question' ? 'architect' : 'implementer';
}

/**
 * What a landing's fix loop is told when its gate is red. Fixed wording on purpose: the loop
 * routes by the words of its request, and suite names (user data) must not route a red gate
 * to an architect. It classifies as a test fix (implementer).
 */
export const landingRepairRequest = "The landing's gate is red: a gate suite fails on the rebased branch. Fix the cause so the suite passes.";
