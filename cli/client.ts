import type { Quarantine } from '../core/quarantine';
/**
 * A small typed client of the Tarmac REST API over the global `fetch`.
 * Every error becomes a `CliError` whose message a user can act on.
 */
import type { LandingOutcome, Meters, StepRecord, GateSuiteResult, BranchHead } from '../core/types';
import type { CliConfig } from './config';
import { ApiCallError, CliError } from './errors';

export interface LandingCreated {
  id: string;
  duplicate: boolean;
  repo: string;
  target: string;
  targetSha: string;
  heads: BranchHead[];
  links: { self: string };
}

/** A retry of a landing that did not land: a new run on the retried run's heads. */
export interface LandingRetried extends LandingCreated {
  retryOf: string;
  attempt: number;
}

export interface LandingView {
  id: string;
  workflowStatus: string;
  phase: string;
  steps: StepRecord[];
  gates: GateSuiteResult[];
  meters: Partial<Meters>;
  pendingQuestions: { id: string; question: string; from?: string; why?: string }[];
  reviews: Record<string, unknown>[];
  outcome?: LandingOutcome;
}

export interface LandingCreate {
  repo: string;
  branches: string[];
  target: string;
  agents?: { resolver?: string; fixer?: string };
  /** Priority lane in the target queue (-100..100, default 0): higher lanes are admitted first. */
  priority?: number;
}

export interface FixCreate {
  repo: string;
  branch: string;
  request: string;
  reproCommand?: string;
  maxRepairs?: number;
  agents?: { implementer?: string; architect?: string };
}

/** A suite quarantined on a target (GET /v1/quarantines). */
export type QuarantineView = Quarantine & { repo: string; target: string };

/** An environment cached on the API's host (GET /v1/environments). */
export interface EnvironmentView {
  key: string;
  repo: string;
  baseImage: string;
  sizeBytes: number;
  builtAt: string;
  lastUsedAt: string;
  buildMs: number;
  usedBy: string[];
  builtBy: { runId: string };
  inputs: { path: string; oid?: string; absent?: true }[];
  products: string[];
  egress: { host: string; port: number; allowed: boolean; bytesUp: number; bytesDown: number; reason?: string }[];
  declaration: { source: string; file: string; image?: string; setup: string[]; inputs: string[]; egress?: string[]; envNames: string[] };
}

export interface RunCreated {
  id: string;
  duplicate: boolean;
  links: { self: string };
}

export interface RunView {
  id: string;
  /** The workflow type: landing, reviewPanel, fixLoop, nightly, agentSession… */
  type: string;
  workflowStatus: string;
  status: unknown;
  result?: unknown;
}

/** GET /v1/runs filters; every one optional. */
export interface RunListFilter {
  kind?: string;
  repo?: string;
  target?: string;
  branch?: string;
  phase?: string;
  outcome?: string;
  status?: string;
  limit?: number;
}

export interface RunSummary {
  id: string;
  kind: string;
  workflowStatus: string;
  startTime: string;
  closeTime?: string;
  repo?: string;
  target?: string;
  branches?: string[];
  phase?: string;
  outcome?: string;
  parent?: string;
}

/** One landing in a target queue's waiting line (GET /v1/queues/:repo/:target). */
export interface QueueEntry {
  landingId: string;
  /** 0: next to go. */
  position: number;
  lane: number;
  seq: number;
  batchable: boolean;
  /** Expected time until its turn is over; absent until the queue has timed a turn. */
  etaMs?: number;
}

/** A target queue now: who holds the target, the batch in flight, the waiting line. */
export interface QueueView {
  repo: string;
  target: string;
  queueId: string;
  running: boolean;
  current?: string;
  batch?: { id: string; members: string[] };
  waiting: QueueEntry[];
  admitted: number;
  batches: number;
  turnInFlightMs?: number;
  recentTurnMs: number[];
}

export interface ReviewCreate {
  repo: string;
  base: string;
  head: string;
  panel: string;
  quorum?: number;
}

export type BudgetCommand = { action: 'extend'; tokens?: number; costUsd?: number; sessions?: number; wallMs?: number } | { action: 'stop' };

export interface BudgetAnswer {
  accepted: boolean;
  budget?: { tokens?: number; costUsd?: number; sessions?: number; wallMs?: number; onExhausted?: string };
}

export interface ScheduleCreate {
  repo: string;
  target: string;
  cron?: string;
  timezone?: string;
  paused?: boolean;
  agents?: { implementer?: string };
}

export interface ScheduleSummary {
  id: string;
  repo: string;
  target: string;
  cron: string;
  timezone: string;
  agents?: { implementer?: string; ladder?: string[] };
  paused: boolean;
  nextRuns: string[];
}

export interface ScheduleCreated extends ScheduleSummary {
  duplicate: boolean;
  links: { self: string; trigger: string };
}

export interface ScheduleView extends ScheduleSummary {
  note?: string;
  actionsTaken: number;
  running: string[];
  recentRuns: { workflowId: string; scheduledAt: string; takenAt: string; workflowStatus: string; outcome?: Record<string, unknown> }[];
}

/** What a failed `fetch` means to the user: the URL and the reason. */
export function unreachable(url: string, error: unknown): CliError {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const reason = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
  return new CliError(`cannot reach the Tarmac API at ${url} (${reason}); is \`tarmac dev\` (or \`tarmac api\`) running? Set TARMAC_API_URL to point elsewhere.`);
}

/** Turns a non-2xx answer into an ApiCallError with the API's own code and message. */
export async function apiError(response: Response, config: Pick<CliConfig, 'tokenSource'>): Promise<ApiCallError> {
  const text = await response.text().catch(() => '');
  let error: { code?: unknown; message?: unknown; details?: unknown } | undefined;
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error;
  } catch {
    // Not our error shape (a proxy, or not a Tarmac API at that URL): report the status.
  }
  const code = typeof error?.code === 'string' ? error.code : `HTTP_${response.status}`;
  let message = typeof error?.message === 'string' ? error.message : `${response.status} ${response.statusText}${text ? `: ${text.slice(0, 200)}` : ''}`;
  if (response.status === 401) message += ` (the token from ${config.tokenSource} was refused)`;
  const details = typeof error?.details === 'object' && error.details !== null ? (error.details as Record<string, unknown>) : undefined;
  return new ApiCallError(response.status, code, message, details);
}

export class TarmacClient {
  constructor(readonly config: CliConfig) {}

  /** Absolute URL of an API path. */
  url(path: string): string {
    return `${this.config.apiUrl}${path}`;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.config.apiToken}`, ...extra };
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    let response: Response;
    try {
      response = await fetch(this.url(path), {
        method,
        headers: this.headers(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(60_000),
      });
    } catch (error) {
      throw unreachable(this.config.apiUrl, error);
    }
    if (!response.ok) throw await apiError(response, this.config);
    const text = await response.text();
    try {
      return { status: response.status, body: JSON.parse(text) as T };
    } catch {
      throw new CliError(`the API at ${this.config.apiUrl} answered ${method} ${path} with something that is not JSON`);
    }
  }

  async createLanding(request: LandingCreate): Promise<LandingCreated> {
    return (await this.request<LandingCreated>('POST', '/v1/landings', request)).body;
  }

  async landing(id: string): Promise<LandingView> {
    return (await this.request<LandingView>('GET', `/v1/landings/${encodeURIComponent(id)}`)).body;
  }

  async answer(id: string, text: string, questionId?: string): Promise<{ accepted: boolean; questionId: string }> {
    const body = { text, ...(questionId ? { questionId } : {}) };
    return (await this.request<{ accepted: boolean; questionId: string }>('POST', `/v1/runs/${encodeURIComponent(id)}/answers`, body)).body;
  }

  async cancel(id: string): Promise<{ id: string; cancelRequested: boolean }> {
    return (await this.request<{ id: string; cancelRequested: boolean }>('POST', `/v1/landings/${encodeURIComponent(id)}/cancel`)).body;
  }

  async retry(id: string): Promise<LandingRetried> {
    return (await this.request<LandingRetried>('POST', `/v1/landings/${encodeURIComponent(id)}/retry`)).body;
  }

  async createFixLoop(request: FixCreate): Promise<RunCreated> {
    return (await this.request<RunCreated>('POST', '/v1/fix-loops', request)).body;
  }

  async run(id: string): Promise<RunView> {
    return (await this.request<RunView>('GET', `/v1/runs/${encodeURIComponent(id)}`)).body;
  }

  async listRuns(filter: RunListFilter): Promise<RunSummary[]> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(filter)) if (value !== undefined) query.set(name, String(value));
    const text = query.toString();
    return (await this.request<{ runs: RunSummary[] }>('GET', `/v1/runs${text ? `?${text}` : ''}`)).body.runs;
  }

  async queues(): Promise<QueueView[]> {
    return (await this.request<{ queues: QueueView[] }>('GET', '/v1/queues')).body.queues;
  }

  async queue(repo: string, target: string): Promise<QueueView> {
    return (await this.request<QueueView>('GET', `/v1/queues/${encodeURIComponent(repo)}/${encodeURIComponent(target)}`)).body;
  }

  async createReview(request: ReviewCreate): Promise<RunCreated> {
    return (await this.request<RunCreated>('POST', '/v1/reviews', request)).body;
  }

  async budget(id: string, command: BudgetCommand): Promise<BudgetAnswer> {
    return (await this.request<BudgetAnswer>('POST', `/v1/runs/${encodeURIComponent(id)}/budget`, command)).body;
  }

  async schedules(): Promise<ScheduleSummary[]> {
    return (await this.request<{ schedules: ScheduleSummary[] }>('GET', '/v1/schedules')).body.schedules;
  }

  async createSchedule(request: ScheduleCreate): Promise<ScheduleCreated> {
    return (await this.request<ScheduleCreated>('POST', '/v1/schedules', request)).body;
  }

  async schedule(id: string): Promise<ScheduleView> {
    return (await this.request<ScheduleView>('GET', `/v1/schedules/${encodeURIComponent(id)}`)).body;
  }

  async triggerSchedule(id: string): Promise<{ id: string; triggered: boolean }> {
    return (await this.request<{ id: string; triggered: boolean }>('POST', `/v1/schedules/${encodeURIComponent(id)}/trigger`)).body;
  }

  async deleteSchedule(id: string): Promise<{ id: string; deleted: boolean }> {
    return (await this.request<{ id: string; deleted: boolean }>('DELETE', `/v1/schedules/${encodeURIComponent(id)}`)).body;
  }

  async quarantines(filter: { repo?: string; target?: string }): Promise<QuarantineView[]> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(filter)) if (value !== undefined) query.set(name, value);
    const text = query.toString();
    return (await this.request<{ quarantines: QuarantineView[] }>('GET', `/v1/quarantines${text ? `?${text}` : ''}`)).body.quarantines;
  }

  async environments(filter: { repo?: string }): Promise<EnvironmentView[]> {
    const text = filter.repo === undefined ? '' : `?${new URLSearchParams({ repo: filter.repo }).toString()}`;
    return (await this.request<{ environments: EnvironmentView[] }>('GET', `/v1/environments${text}`)).body.environments;
  }

  async liftQuarantine(suiteId: string, repo: string, target: string): Promise<{ lifted: boolean; repo: string; target: string; suiteId: string }> {
    const query = new URLSearchParams({ repo, target }).toString();
    return (await this.request<{ lifted: boolean; repo: string; target: string; suiteId: string }>('DELETE', `/v1/quarantines/${encodeURIComponent(suiteId)}?${query}`)).body;
  }
}
