import { waitFor, type Stack } from './stack';

/**
 * Waits until a run of any kind (`/v1/runs/:id`) has completed and returns its result. Only
 * COMPLETED ends the wait: a run that fails or is cancelled runs the wait out, and the timeout's
 * message names `what`.
 */
export async function runResult(stack: Pick<Stack, 'api'>, id: string, what: string, timeoutMs = 240_000): Promise<any> {
  const run = await waitFor(
    () => stack.api('GET', `/v1/runs/${id}`),
    (response) => response.body?.workflowStatus === 'COMPLETED',
    timeoutMs,
    what,
  );
  return run.body.result;
}
