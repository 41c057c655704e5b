/**
 * A small typed client of the Tarmac REST API over the global `fetch`.
 * Every error becomes a `CliError` whose message a user can act on. What crosses the wire is
 * typed by the API's own schemas (api/schemas.ts): a field renamed there breaks this file's build.
 */
import type { Static } from '@sinclair/typebox';
import type {
  ScheduleCreate as ScheduleCreateBody,
  ScheduleCreated,
  ScheduleDeleted,
  ScheduleSummary,
  ScheduleTriggered,
  ScheduleView,
} from '../api/schedule-schemas';
import type {
  AgentsView,
  AnswerAccepted,
  BudgetAnswer,
  BudgetCommand,
  CancelRequested,
  EnvironmentView,
  FixCreate,
  LandingCreate,
  LandingCreated,
  LandingRetried,
  LandingView,
  QuarantineLifted,
  QuarantineView,
  QueueView,
  ReviewCreate,
  RunCreated,
  RunListQuery,
  RunSummary,
  RunView,
} from '../api/schemas';
import type { CliConfig } from './config';
import { ApiCallError, CliError } from './errors';

export type { AgentsView, BudgetCommand, EnvironmentView, LandingView, QuarantineView, QueueView, RunSummary, ScheduleSummary, ScheduleView };

/** GET /v1/runs filters, as the command line gives them; every one optional. */
type RunListFilter = { [Name in keyof Static<typeof RunListQuery>]?: string | number };

/** POST /v1/schedules as a client sends it: the fields with a default may be left out. */
type ScheduleCreate = Omit<ScheduleCreateBody, 'cron' | 'timezone' | 'paused'> & Partial<Pick<ScheduleCreateBody, 'cron' | 'timezone' | 'paused'>>;

/** What a failed `fetch` means to the user: the URL and the reason. */
export function unreachable(url: string, error: unknown): CliError {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const reason = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
  return new CliError(
    `cannot reach the Tarmac API at ${url} (${reason}); is \`tarmac dev\` (or \`tarmac api\`) running? Set TARMAC_API_URL to point elsewhere.`,
  );
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

  async answer(id: string, text: string, questionId?: string): Promise<AnswerAccepted> {
    const body = { text, ...(questionId ? { questionId } : {}) };
    return (await this.request<AnswerAccepted>('POST', `/v1/runs/${encodeURIComponent(id)}/answers`, body)).body;
  }

  async cancel(id: string): Promise<CancelRequested> {
    return (await this.request<CancelRequested>('POST', `/v1/landings/${encodeURIComponent(id)}/cancel`)).body;
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

  async triggerSchedule(id: string): Promise<ScheduleTriggered> {
    return (await this.request<ScheduleTriggered>('POST', `/v1/schedules/${encodeURIComponent(id)}/trigger`)).body;
  }

  async deleteSchedule(id: string): Promise<ScheduleDeleted> {
    return (await this.request<ScheduleDeleted>('DELETE', `/v1/schedules/${encodeURIComponent(id)}`)).body;
  }

  async agents(): Promise<AgentsView> {
    return (await this.request<AgentsView>('GET', '/v1/agents')).body;
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

  async liftQuarantine(suiteId: string, repo: string, target: string): Promise<QuarantineLifted> {
    const query = new URLSearchParams({ repo, target }).toString();
    return (await this.request<QuarantineLifted>('DELETE', `/v1/quarantines/${encodeURIComponent(suiteId)}?${query}`)).body;
  }
}
