import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

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
