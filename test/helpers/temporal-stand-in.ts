import {
  QueryNotRegisteredError,
  ScheduleNotFoundError,
  ServiceError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowStartOptions,
} from '@temporalio/client';
import {
  defaultPayloadConverter,
  TypedSearchAttributes,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  type SearchAttributePair,
} from '@temporalio/common';

/**
 * A stand-in for the Temporal `Client` the API is built with (`buildApp({ client })`), for route
 * tests that run without a Temporal server. It models only what the routes call — start,
 * handles (describe, query, result, executeUpdate, cancel, and the history's first event — the start
 * with its input — for fetchHistory), list and count by a visibility query,
 * schedules' list and describe, the health check's system-info call — over runs held in memory,
 * and it fails the way the SDK does: `WorkflowExecutionAlreadyStartedError` for a taken id,
 * `WorkflowNotFoundError` for an unknown one, `WorkflowUpdateFailedError` for a rejected update,
 * a `ServiceError` caused by gRPC UNAVAILABLE (14) while `unreachable` is set. Anything it does
 * not model throws, so a route that starts calling something new fails its test instead of
 * passing on a silent default. The real client's behaviour is what test/e2e/api-routes.test.ts
 * checks.
 */

/** Execution statuses by the names the SDK reports, with the codes of the Temporal API enum. */
const statusCodes = { RUNNING: 1, COMPLETED: 2, FAILED: 3, CANCELLED: 4, TERMINATED: 5, CONTINUED_AS_NEW: 6, TIMED_OUT: 7 } as const;
export type StandInStatus = keyof typeof statusCodes;

/** `ExecutionStatus = '…'` in a visibility query names statuses this way. */
const queryStatusNames: Record<string, StandInStatus> = {
  Running: 'RUNNING',
  Completed: 'COMPLETED',
  Failed: 'FAILED',
  Canceled: 'CANCELLED',
  Terminated: 'TERMINATED',
  ContinuedAsNew: 'CONTINUED_AS_NEW',
  TimedOut: 'TIMED_OUT',
};

/** One workflow execution the stand-in holds: what a worker running it would answer. */
export interface StandInRun {
  workflowId: string;
  type: string;
  status: StandInStatus;
  taskQueue: string;
  args: unknown[];
  startTime: Date;
  closeTime?: Date;
  searchAttributes: SearchAttributePair[];
  memo: Record<string, unknown>;
  /** The workflow's query handlers by query name (`setHandler(query, …)`). */
  queries: Record<string, (...args: any[]) => unknown>;
  /** Its update handlers by update name; one that throws is a rejected update. */
  updates: Record<string, (...args: any[]) => unknown>;
  /** What `result()` returns once the run is COMPLETED. */
  result?: unknown;
  cancelRequested: boolean;
}

/** The gRPC status the SDK's errors carry when the Temporal frontend cannot be reached. */
function unavailable(what: string): ServiceError {
  const grpc = Object.assign(new Error('14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:7233'), { code: 14 });
  return new ServiceError(`Failed to ${what}`, { cause: grpc });
}

/** A visibility query of `Name = 'value'` (or `!=`, or `IN ('a', 'b')`) clauses joined by AND, as the routes build them; anything else is refused. */
function parseQuery(query: string): { name: string; value: string | string[]; not: boolean }[] {
  return query.split(' AND ').map((clause) => {
    const among = /^(\w+) IN \(('[^'\\]*'(?:, '[^'\\]*')*)\)$/.exec(clause);
    if (among) return { name: among[1]!, value: among[2]!.split(', ').map((quoted) => quoted.slice(1, -1)), not: false };
    const match = /^(\w+) (!?=) '([^'\\]*)'$/.exec(clause);
    if (!match) throw new Error(`stand-in: cannot evaluate the visibility query clause "${clause}" of "${query}"`);
    return { name: match[1]!, value: match[3]!, not: match[2] === '!=' };
  });
}

function attribute(run: StandInRun, name: string): unknown {
  return run.searchAttributes.find((pair) => pair.key.name === name)?.value;
}

function matches(run: StandInRun, clauses: { name: string; value: string | string[]; not: boolean }[]): boolean {
  return clauses.every(
    ({ not, name, value }) =>
      (typeof value === 'string' ? matchesClause(run, { name, value }) : value.some((one) => matchesClause(run, { name, value: one }))) !== not,
  );
}

function matchesClause(run: StandInRun, { name, value }: { name: string; value: string }): boolean {
  if (name === 'ExecutionStatus') return run.status === queryStatusNames[value];
  if (name === 'WorkflowType') return run.type === value;
  const current = attribute(run, name);
  // A keyword list matches when the value is one of its entries (TarmacBranch).
  return Array.isArray(current) ? current.includes(value) : current === value;
}

export class TemporalStandIn {
  readonly runs = new Map<string, StandInRun>();
  /** Every `workflow.start` call, accepted or not, in order. */
  readonly startCalls: { workflowType: string; options: WorkflowStartOptions }[] = [];
  /** Every visibility query asked (`workflow.list` and `workflow.count`). */
  readonly visibilityQueries: string[] = [];
  /** Every update executed, by workflow id and update name, with its argument. */
  readonly updateCalls: { workflowId: string; name: string; arg: unknown }[] = [];
  /** While true every call fails as the SDK's do when Temporal cannot be reached. */
  unreachable = false;
  private readonly waiting = new Map<string, ((result: unknown) => void)[]>();

  /** Forgets every run and call and reaches Temporal again: a fresh server for the next test, under the same app. */
  reset(): void {
    this.runs.clear();
    this.startCalls.length = 0;
    this.visibilityQueries.length = 0;
    this.updateCalls.length = 0;
    this.waiting.clear();
    this.unreachable = false;
  }

  /** Adds a run as if it had been started earlier (defaults: a RUNNING landing started now). */
  add(run: Partial<StandInRun> & Pick<StandInRun, 'workflowId'>): StandInRun {
    const full: StandInRun = {
      type: 'landing',
      status: 'RUNNING',
      taskQueue: 'tarmac',
      args: [],
      startTime: new Date(),
      searchAttributes: [],
      memo: {},
      queries: {},
      updates: {},
      cancelRequested: false,
      ...run,
    };
    this.runs.set(full.workflowId, full);
    return full;
  }

  /** Ends a run with a result, as its worker would; a pending `result()` resolves. */
  complete(workflowId: string, result: unknown): void {
    const run = this.existing(workflowId);
    Object.assign(run, { status: 'COMPLETED', result, closeTime: new Date() });
    for (const resolve of this.waiting.get(workflowId) ?? []) resolve(result);
    this.waiting.delete(workflowId);
  }

  /** The stand-in as the SDK's type, for `buildApp`; only the members above exist. */
  get client(): Client {
    const workflow = {
      start: async (workflowType: string, options: WorkflowStartOptions) => this.start(workflowType, options),
      getHandle: (workflowId: string) => this.handle(workflowId),
      list: ({ query }: { query: string }) => this.list(query),
      count: async (query: string) => this.count(query),
    };
    const schedule = {
      list: () => this.schedules(),
      getHandle: (scheduleId: string) => ({
        describe: async () => {
          this.reach('describe schedule');
          throw new ScheduleNotFoundError(`schedule not found: ${scheduleId}`, scheduleId);
        },
      }),
    };
    const connection = {
      withDeadline: async <T>(_deadline: number, call: () => Promise<T>) => await call(),
      workflowService: {
        getSystemInfo: async () => {
          if (this.unreachable) throw Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 });
          return {};
        },
      },
    };
    return new Proxy(
      { workflow, schedule, connection },
      {
        get(target, member) {
          // Symbols and `then` are asked by inspection and by `await`, not by the routes.
          if (typeof member === 'symbol' || member === 'then') return undefined;
          if (!(member in target)) throw new Error(`stand-in: Client.${member} is not modelled`);
          return target[member as keyof typeof target];
        },
      },
    ) as unknown as Client;
  }

  private reach(what: string): void {
    if (this.unreachable) throw unavailable(what);
  }

  private existing(workflowId: string): StandInRun {
    const run = this.runs.get(workflowId);
    if (!run) throw new WorkflowNotFoundError(`workflow not found for ID: ${workflowId}`, workflowId, undefined);
    return run;
  }

  private start(workflowType: string, options: WorkflowStartOptions) {
    this.startCalls.push({ workflowType, options });
    this.reach('start workflow');
    const { workflowId } = options;
    const current = this.runs.get(workflowId);
    if (current && (current.status === 'RUNNING' || options.workflowIdReusePolicy === WorkflowIdReusePolicy.REJECT_DUPLICATE)) {
      throw new WorkflowExecutionAlreadyStartedError('Workflow execution already started', workflowId, workflowType);
    }
    const attributes = options.typedSearchAttributes;
    this.add({
      workflowId,
      type: workflowType,
      taskQueue: options.taskQueue,
      args: [...(options.args ?? [])],
      searchAttributes: attributes instanceof TypedSearchAttributes ? attributes.getAll() : [...(attributes ?? [])],
      memo: { ...(options.memo ?? {}) },
    });
    return this.handle(workflowId);
  }

  private handle(workflowId: string) {
    return {
      workflowId,
      describe: async () => {
        this.reach('describe workflow');
        return this.info(this.existing(workflowId));
      },
      query: async (query: string | { name: string }, ...args: unknown[]) => {
        this.reach('query workflow');
        const run = this.existing(workflowId);
        const name = typeof query === 'string' ? query : query.name;
        const handler = run.queries[name];
        // Code 3 (INVALID_ARGUMENT) is what the server answers for a query the workflow does not register.
        if (!handler) throw new QueryNotRegisteredError(`unknown queryType ${name}`, 3);
        return handler(...args);
      },
      result: async () => {
        this.reach('get workflow result');
        const run = this.existing(workflowId);
        if (run.status === 'COMPLETED') return run.result;
        if (run.status !== 'RUNNING') throw new Error(`stand-in: ${workflowId} ended ${run.status}`);
        return await new Promise((resolve) => this.waiting.set(workflowId, [...(this.waiting.get(workflowId) ?? []), resolve]));
      },
      executeUpdate: async (update: string | { name: string }, options: { args?: unknown[] } = {}) => {
        this.reach('execute update');
        const run = this.existing(workflowId);
        const name = typeof update === 'string' ? update : update.name;
        this.updateCalls.push({ workflowId, name, arg: options.args?.[0] });
        // Temporal refuses updates on a closed run as "workflow execution already completed" (not found).
        if (run.status !== 'RUNNING') throw new WorkflowNotFoundError('workflow execution already completed', workflowId, undefined);
        const handler = run.updates[name];
        if (!handler) throw new WorkflowUpdateFailedError('Workflow Update failed', new Error(`unknown update ${name}`));
        try {
          return handler(...(options.args ?? []));
        } catch (error) {
          throw new WorkflowUpdateFailedError('Workflow Update failed', error instanceof Error ? error : new Error(String(error)));
        }
      },
      cancel: async () => {
        this.reach('cancel workflow');
        this.existing(workflowId).cancelRequested = true;
      },
      /** Only the first event: the start, with the input encoded as the default data converter does. */
      fetchHistory: async () => {
        this.reach('fetch workflow history');
        const run = this.existing(workflowId);
        const input = { payloads: run.args.map((arg) => defaultPayloadConverter.toPayload(arg)) };
        return {
          events: [{ eventId: 1, workflowExecutionStartedEventAttributes: { workflowType: { name: run.type }, taskQueue: { name: run.taskQueue }, input } }],
        };
      },
    };
  }

  private info(run: StandInRun) {
    return {
      type: run.type,
      workflowId: run.workflowId,
      runId: `${run.workflowId}-run`,
      taskQueue: run.taskQueue,
      status: { code: statusCodes[run.status], name: run.status },
      historyLength: 0,
      startTime: run.startTime,
      ...(run.closeTime ? { closeTime: run.closeTime } : {}),
      memo: run.memo,
      searchAttributes: {},
      typedSearchAttributes: new TypedSearchAttributes(run.searchAttributes),
    };
  }

  private selected(query: string): StandInRun[] {
    this.visibilityQueries.push(query);
    this.reach('list workflows');
    const clauses = parseQuery(query);
    return [...this.runs.values()].filter((run) => matches(run, clauses)).sort((a, b) => b.startTime.getTime() - a.startTime.getTime());
  }

  private async *schedules(): AsyncGenerator<never> {
    this.reach('list schedules');
    yield* [];
  }

  private async *list(query: string) {
    for (const run of this.selected(query)) yield this.info(run);
  }

  private count(query: string) {
    return { count: this.selected(query).length, groups: [] };
  }
}
