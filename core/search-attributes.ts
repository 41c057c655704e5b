import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

/**
 * The `Tarmac*` search attributes. `tarmac dev` registers them on the embedded
 * server; the docker-compose setup registers them with `temporal operator`.
 */
export const searchAttributes = {
  kind: defineSearchAttributeKey('TarmacKind', SearchAttributeType.KEYWORD),
  repo: defineSearchAttributeKey('TarmacRepo', SearchAttributeType.KEYWORD),
  target: defineSearchAttributeKey('TarmacTarget', SearchAttributeType.KEYWORD),
  branch: defineSearchAttributeKey('TarmacBranch', SearchAttributeType.KEYWORD_LIST),
  phase: defineSearchAttributeKey('TarmacPhase', SearchAttributeType.KEYWORD),
  outcome: defineSearchAttributeKey('TarmacOutcome', SearchAttributeType.KEYWORD),
} as const;

/** `name=Type` pairs as the `temporal` CLI takes them (`--search-attribute`). */
export const searchAttributeDeclarations: readonly string[] = [
  'TarmacKind=Keyword',
  'TarmacRepo=Keyword',
  'TarmacTarget=Keyword',
  'TarmacBranch=KeywordList',
  'TarmacPhase=Keyword',
  'TarmacOutcome=Keyword',
];

/**
 * What a child workflow carries so the Web UI can find it like its parent: its kind, the
 * repo and target it works on, and its parent run. Child workflows inherit neither search
 * attributes nor memo, so every `executeChild` passes these.
 */
export function childRecord(
  kind: string,
  context: { repo: string; target?: string; parent: string; summary?: Record<string, unknown> },
): {
  typedSearchAttributes: SearchAttributePair[];
  memo: Record<string, unknown>;
} {
  return {
    typedSearchAttributes: [
      { key: searchAttributes.kind, value: kind },
      { key: searchAttributes.repo, value: context.repo },
      ...(context.target ? [{ key: searchAttributes.target, value: context.target }] : []),
    ],
    memo: { parent: context.parent, ...(context.summary ? { request: context.summary } : {}) },
  };
}

/**
 * What every landing starts with, whoever starts it (the API, a nightly): its search
 * attributes (phase `validate` until the run moves it) and a memo with the request summary.
 */
export function landingRecord(
  landing: { repo: string; target: string; heads: { branch: string; sha: string }[] },
  memo: Record<string, unknown> = {},
): {
  typedSearchAttributes: SearchAttributePair[];
  memo: Record<string, unknown>;
} {
  return {
    typedSearchAttributes: [
      { key: searchAttributes.kind, value: 'landing' },
      { key: searchAttributes.repo, value: landing.repo },
      { key: searchAttributes.target, value: landing.target },
      { key: searchAttributes.branch, value: landing.heads.map((head) => head.branch) },
      { key: searchAttributes.phase, value: 'validate' },
    ],
    memo: { request: { repo: landing.repo, target: landing.target, heads: landing.heads }, tarmacVersion: '0.1.0', ...memo },
  };
}
