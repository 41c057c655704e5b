import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value';
import { durationPattern, parseDuration } from './duration';
import { EnvironmentSchema, environmentProblem, imagePattern } from './environment-fields';

/** Where a target repository declares its gates, relative to the repository root. */
export const gateFilePath = '.config/tarmac/land-gate.json';

/** Image used by suites when the gate file names none. */
export const defaultRunnerImage = 'tarmac/runner:bookworm';

/** Suite timeout when the gate file names none. */
export const defaultSuiteTimeout = '10m';

/** A suite's timeout in milliseconds (its own, or the default). */
export function suiteTimeoutMs(suite: { timeout?: string }): number {
  return parseDuration(suite.timeout ?? defaultSuiteTimeout) ?? 600_000;
}

const SuiteSchema = Type.Object(
  {
    id: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,62}$', description: 'lowercase letters, digits, "-" and "_"' }),
    run: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'argv, run without a shell' }),
    timeout: Type.Optional(Type.String({ pattern: durationPattern, description: 'e.g. "30s", "10m", "1h"' })),
  },
  { additionalProperties: false },
);

export const GateFileSchema = Type.Object(
  {
    version: Type.Literal(1),
    image: Type.Optional(Type.String({ minLength: 1, pattern: imagePattern })),
    suites: Type.Array(SuiteSchema, { minItems: 1 }),
    review: Type.Optional(Type.Object({ panel: Type.String({ minLength: 1 }), quorum: Type.Integer({ minimum: 1 }) }, { additionalProperties: false })),
    fixup: Type.Optional(Type.Object({ maxRounds: Type.Integer({ minimum: 0, maximum: 5 }) }, { additionalProperties: false })),
    queue: Type.Optional(
      Type.Object(
        { batchSize: Type.Integer({ minimum: 1, maximum: 16, description: 'landings the target queue tests together (1: one at a time)' }) },
        { additionalProperties: false },
      ),
    ),
    /** What the gates and agents run in: see core/environment.ts. */
    environment: Type.Optional(EnvironmentSchema),
  },
  { additionalProperties: false },
);

export type GateFile = Static<typeof GateFileSchema>;
export type GateSuite = Static<typeof SuiteSchema>;

export type GateFileParse = { ok: true; gate: GateFile } | { ok: false; field: string; message: string };

/** Turns a JSON pointer (`/suites/0/run`) into the field notation users read (`suites[0].run`). */
export function fieldName(pointer: string): string {
  const parts = pointer.split('/').filter((part) => part.length > 0);
  let field = '';
  for (const part of parts) field += /^[0-9]+$/.test(part) ? `[${part}]` : field ? `.${part}` : part;
  return field || '(root)';
}

function describe(error: ValueError, prefix?: string): { field: string; message: string } {
  const inner = fieldName(error.path);
  const field = prefix === undefined ? inner : inner === '(root)' ? prefix : inner.startsWith('[') ? `${prefix}${inner}` : `${prefix}.${inner}`;
  const schema = error.schema as { description?: string };
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties: {
      // TypeBox points at the unexpected key itself; list the valid ones so the user can fix it.
      const allowed = Object.keys((error.schema as { properties?: object }).properties ?? {});
      return { field, message: `is not a known field (valid fields: ${allowed.join(', ')})` };
    }
    case ValueErrorType.ObjectRequiredProperty:
      return { field, message: 'is required' };
    default: {
      const hint = schema.description ? ` (${schema.description})` : '';
      // Only the first letter: a pattern or a value quoted in the message keeps its case.
      return { field, message: `${error.message.charAt(0).toLowerCase()}${error.message.slice(1)}${hint}` };
    }
  }
}

/**
 * The first way `data` breaks `schema`, named the way users read fields; undefined when it fits.
 * With a prefix the field is named from there (`customizations.tarmac` + `/inputs/0`).
 */
export function schemaProblem(schema: TSchema, data: unknown, prefix?: string): { field: string; message: string } | undefined {
  const first = Value.Errors(schema, data).First();
  return first ? describe(first, prefix) : undefined;
}

/** Parses and validates a gate file's text; the error names the field and how to fix it. */
export function parseGateFile(text: string): GateFileParse {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { ok: false, field: '(root)', message: `is not valid JSON: ${(error as Error).message}` };
  }
  const problem = schemaProblem(GateFileSchema, data);
  if (problem) return { ok: false, ...problem };
  const gate = data as GateFile;
  const seen = new Set<string>();
  for (const [index, suite] of gate.suites.entries()) {
    if (seen.has(suite.id)) return { ok: false, field: `suites[${index}].id`, message: `duplicates suite id "${suite.id}"` };
    seen.add(suite.id);
  }
  const environment = gate.environment && environmentProblem(gate.environment);
  if (environment) return { ok: false, ...environment };
  return { ok: true, gate };
}
