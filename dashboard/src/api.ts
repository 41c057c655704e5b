/**
 * The dashboard's calls to the API: same origin, the bearer token of this tab (sessionStorage:
 * gone when the tab closes; never a cookie, never localStorage, never in a URL).
 */
const tokenKey = 'tarmac.dashboard.token';

export const token = {
  get: (): string | null => sessionStorage.getItem(tokenKey),
  set: (value: string): void => sessionStorage.setItem(tokenKey, value),
  clear: (): void => sessionStorage.removeItem(tokenKey),
};

/** An answer of the API that is not 2xx: its status, and the error's code and message. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Called when the API refuses the token (401): the page goes back to the login. */
let onUnauthorized: () => void = () => undefined;
export function whenUnauthorized(callback: () => void): void {
  onUnauthorized = callback;
}

export async function api<T>(method: 'GET' | 'POST', path: string, body?: unknown, bearer = token.get()): Promise<T> {
  const response = await fetch(path, {
    method,
    headers: {
      accept: 'application/json',
      ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    cache: 'no-store',
    credentials: 'omit',
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!response.ok) {
    const error = (json as { error?: { code?: string; message?: string } } | undefined)?.error;
    if (response.status === 401) onUnauthorized();
    throw new ApiFailure(response.status, error?.code ?? `HTTP_${response.status}`, error?.message ?? (text.slice(0, 200) || response.statusText));
  }
  return json as T;
}

/** The query string of the defined, non-empty values. */
export function query(values: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) if (value !== undefined && value !== '') params.set(key, String(value));
  const text = params.toString();
  return text ? `?${text}` : '';
}
