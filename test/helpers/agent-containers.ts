/**
 * What the real-agent tests check around a session: its containers as Docker saw them (inspected
 * while they exist: a session's cleanup removes them), and that the worker's key shows up nowhere a
 * user or an agent could read it.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { readEvents } from './sse';
import { testToken, type Stack } from './stack';

/** Inspects every container labelled with the harness until `stop`; `inspected` maps id → `docker inspect` JSON. */
export function watchHarnessContainers(docker: Docker, harness: string): { inspected: Map<string, string>; stop(): Promise<void> } {
  const inspected = new Map<string, string>();
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const found = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tarmac.harness=${harness}`] }) }).catch(() => []);
      for (const info of found) {
        if (inspected.has(info.Id)) continue;
        const details = await docker
          .getContainer(info.Id)
          .inspect()
          .catch(() => undefined);
        if (details) inspected.set(info.Id, JSON.stringify(details));
      }
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  })();
  return {
    inspected,
    stop: async () => {
      watching = false;
      await watcher;
    },
  };
}

/** Every file under `dir` (text), for searching a value in what a run wrote. */
export function everythingUnder(dir: string): string {
  let text = '';
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat?.isDirectory()) text += everythingUnder(path);
    else if (stat?.isFile() && stat.size < 50 * 1024 * 1024) text += readFileSync(path, 'latin1');
  }
  return text;
}

/**
 * The key is not in a landing's view and outcome, the histories of the given workflows, the run
 * dirs (transcripts, usage, logs), the worker's log or the landing's events (with the log lines).
 */
export async function assertKeyNowhere(stack: Stack, secret: string, landing: { id: string; view: unknown; workflowIds: string[] }): Promise<void> {
  assert.ok(!JSON.stringify(landing.view).includes(secret), 'not in the landing view or outcome');
  for (const workflowId of landing.workflowIds) {
    const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
    assert.ok(!JSON.stringify(history).includes(secret), `not in the history of ${workflowId}`);
  }
  assert.ok(!everythingUnder(join(stack.dataDir, 'runs')).includes(secret), 'not in the run dirs (transcript, usage, logs)');
  assert.ok(!readFileSync(stack.workerLog, 'utf8').includes(secret), "not in the worker's log");
  const events = await readEvents(`${stack.apiUrl}/v1/landings/${landing.id}/events`, testToken, { stop: (event) => event.event === 'end' });
  assert.ok(events.length > 5 && !JSON.stringify(events).includes(secret), 'not in the events (with the log lines)');
}
