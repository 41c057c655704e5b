import { Type, type Static } from '@sinclair/typebox';

/** Default cron of a nightly schedule: every day at 03:00 in the schedule's time zone. */
const defaultNightlyCron = '0 3 * * *';
/** Default time zone of a nightly schedule. */
const defaultNightlyTimezone = 'UTC';

const harnessModel = Type.String({ minLength: 3, maxLength: 200, description: 'harness#model' });

export const ScheduleCreateSchema = Type.Object(
  {
    repo: Type.String({ minLength: 1, maxLength: 4096, description: 'git URL or a path on the API host' }),
    target: Type.String({ minLength: 1, maxLength: 255, description: 'branch whose head gets the full gate each night, and onto which a repair lands' }),
    cron: Type.String({
      minLength: 1,
      maxLength: 200,
      default: defaultNightlyCron,
      description: 'five fields `minute hour day-of-month month day-of-week` (names and 0-7 weekdays allowed) or @daily, @hourly, …; default "0 3 * * *"',
    }),
    timezone: Type.String({ minLength: 1, maxLength: 100, default: defaultNightlyTimezone, description: 'IANA time zone the cron is read in; default UTC' }),
    paused: Type.Boolean({ default: false, description: 'create the schedule paused (a trigger still runs it); default false' }),
    agents: Type.Optional(
      Type.Object(
        {
          implementer: Type.Optional({ ...harnessModel, description: "harness#model of the fix loop's implementer (and the landing's fixer)" }),
          ladder: Type.Optional(Type.Array(harnessModel, { minItems: 1, maxItems: 20 })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type ScheduleCreate = Static<typeof ScheduleCreateSchema>;

export const ScheduleIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._-]+$' }) });

/** What a schedule was created with (kept in its memo: the server keeps the cron only in parsed form). */
export const ScheduleDefinitionSchema = Type.Object({
  repo: Type.String(),
  target: Type.String(),
  cron: Type.String(),
  timezone: Type.String(),
  agents: Type.Optional(Type.Object({ implementer: Type.Optional(Type.String()), ladder: Type.Optional(Type.Array(Type.String())) })),
});
export type ScheduleDefinition = Static<typeof ScheduleDefinitionSchema>;

export const ScheduleSummarySchema = Type.Object({
  id: Type.String({ description: "schedule id, derived from repo and target; also the prefix of its runs' workflow ids" }),
  ...ScheduleDefinitionSchema.properties,
  paused: Type.Boolean(),
  nextRuns: Type.Array(Type.String({ description: 'ISO time' })),
});

export const ScheduleCreatedSchema = Type.Object({
  ...ScheduleSummarySchema.properties,
  duplicate: Type.Boolean({ description: 'true when this (repo, target) already had the same schedule; that one is returned' }),
  links: Type.Object({ self: Type.String(), trigger: Type.String() }),
});

export type ScheduleSummary = Static<typeof ScheduleSummarySchema>;
export type ScheduleCreated = Static<typeof ScheduleCreatedSchema>;

export const ScheduleListSchema = Type.Object({ schedules: Type.Array(ScheduleSummarySchema) });

const RecentRunSchema = Type.Object({
  workflowId: Type.String({ description: 'workflow id of the nightly run (the schedule id + the scheduled time)' }),
  scheduledAt: Type.String(),
  takenAt: Type.String(),
  workflowStatus: Type.String({ description: 'RUNNING, COMPLETED, …' }),
  outcome: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'the nightly outcome, when the run completed' })),
});

export const ScheduleViewSchema = Type.Object({
  ...ScheduleSummarySchema.properties,
  note: Type.Optional(Type.String()),
  actionsTaken: Type.Integer(),
  running: Type.Array(Type.String({ description: 'workflow ids of nightly runs in progress' })),
  recentRuns: Type.Array(RecentRunSchema, { description: 'newest first' }),
});
export type ScheduleView = Static<typeof ScheduleViewSchema>;

export const ScheduleTriggeredSchema = Type.Object({ id: Type.String(), triggered: Type.Boolean() });
export type ScheduleTriggered = Static<typeof ScheduleTriggeredSchema>;
export const ScheduleDeletedSchema = Type.Object({ id: Type.String(), deleted: Type.Boolean() });
export type ScheduleDeleted = Static<typeof ScheduleDeletedSchema>;
