/**
 * History size: one landing with a fixup round and a review panel — a red gate, a fix loop whose
 * scripted fixer commits the fix, a green re-gate that supersedes the red, the `script-trio`
 * panel (three reviewer sessions), verify, merge — then the full history of the landing and of
 * every workflow under it (fix loop, panel, agent sessions), weighed. Reports the largest
 * history's events and the biggest payload anywhere against the targets (≤ 1,000 events, no
 * payload over 64 KiB); a missed target is reported with what is big, not thrown.
 */
import { createFixtureRepo, gateFile } from '../infra/fixture-repo';
import type { Stack } from '../test/helpers/stack';
import { weighHistory, type PayloadSite } from './history-walk';

const historyTargets = { events: 1_000, payloadBytes: 64 * 1024 } as const;

export interface WorkflowWeight {
  workflowId: string;
  events: number;
  payloadBytes: number;
  biggestPayload: PayloadSite | undefined;
}

export interface HistoryReport {
  scenario: string;
  landingId: string;
  /** Every workflow of the landing, most events first. */
  workflows: WorkflowWeight[];
  largest: { workflowId: string; events: number; eventsByKind: Record<string, number>; signalsByName: Record<string, number> };
  biggestPayloads: (PayloadSite & { workflowId: string })[];
  targets: { events: { limit: number; largest: number; met: boolean }; payloadBytes: { limit: number; biggest: number; met: boolean } };
  /** Only when a target is missed: what is big. */
  whatIsBig?: string[];
}

const scenario = 'red gate → fix loop (script#fixer) → green re-gate → review panel script-trio (3 reviewers) → verify → merge';

/** The gate wants a file FIXED that the branch lacks; the scripted fixer writes it; the panel reviews the result. */
function fixupAndPanelRepo() {
  return createFixtureRepo({
    base: {
      'check.sh': 'test -f FIXED || { echo "FIXED is missing"; exit 4; }\n',
      '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['sh', 'check.sh'] }], { review: { panel: 'script-trio', quorum: 3 } }),
    },
    // A TODO gives the reviewers a non-blocking finding to report, so their reports are not empty.
    branches: [
      {
        name: 'feature/h',
        commits: [{ message: 'feature without the fix', files: { 'src/feature.js': `module.exports = ${Date.now()}; // TODO: name it\n` } }],
      },
    ],
  });
}

/** The scripted fixer in a scenario that writes FIXED, as the landing-flows fixup test sets it up. */
function fixerAgents(stack: Stack) {
  const fixer = `script#fixer:${stack.scriptScenario('bench-write-fixed', { edits: [{ file: 'FIXED', replace: 'yes\n' }] })}`;
  return { fixer, ladder: [fixer] };
}

interface Outcome {
  status: string;
  summary?: string;
  fixLoops?: unknown[];
  reviews?: unknown[];
}

export async function measureHistory(stack: Stack): Promise<HistoryReport> {
  const repo = fixupAndPanelRepo();
  const created: { status: number; body: { id: string } } = await stack.api('POST', '/v1/landings', {
    repo: repo.url,
    branches: ['feature/h'],
    target: 'main',
    agents: fixerAgents(stack),
  });
  if (created.status !== 201) throw new Error(`POST /v1/landings answered ${created.status}: ${JSON.stringify(created.body)}`);
  const landingId = created.body.id;
  const outcome = (await stack.client.workflow.getHandle(landingId).result()) as Outcome;
  // The figures are only about this scenario if it happened: landed, with a fixup round and a panel.
  if (outcome.status !== 'landed' || !outcome.fixLoops?.length || !outcome.reviews?.length) {
    throw new Error(
      `the history landing did not go through a fixup round and a review panel to landed: ${outcome.status} (${outcome.summary ?? ''}), ${outcome.fixLoops?.length ?? 0} fix loops, ${outcome.reviews?.length ?? 0} reviews`,
    );
  }

  const workflows: WorkflowWeight[] = [];
  const kinds = new Map<string, Pick<ReturnType<typeof weighHistory>, 'eventsByKind' | 'signalsByName'>>();
  const payloads: (PayloadSite & { workflowId: string })[] = [];
  const queue: { workflowId: string; runId?: string }[] = [{ workflowId: landingId }];
  for (let next = queue.shift(); next; next = queue.shift()) {
    const weight = weighHistory(await stack.client.workflow.getHandle(next.workflowId, next.runId).fetchHistory());
    workflows.push({ workflowId: next.workflowId, events: weight.events, payloadBytes: weight.payloadBytes, biggestPayload: weight.payloads[0] });
    kinds.set(next.workflowId, weight);
    payloads.push(...weight.payloads.map((site) => ({ ...site, workflowId: next.workflowId })));
    queue.push(...weight.children);
  }
  workflows.sort((a, b) => b.events - a.events);
  payloads.sort((a, b) => b.bytes - a.bytes);
  const largest = workflows[0]!;
  const biggest = payloads[0];
  const eventsMet = largest.events <= historyTargets.events;
  const payloadMet = (biggest?.bytes ?? 0) <= historyTargets.payloadBytes;
  const byCount = (counts: Record<string, number> = {}) => Object.fromEntries(Object.entries(counts).sort(([, a], [, b]) => b - a));
  const eventsByKind = byCount(kinds.get(largest.workflowId)?.eventsByKind);
  const whatIsBig = [
    ...(eventsMet
      ? []
      : [
          `${largest.workflowId} has ${largest.events} events; most are ${Object.entries(eventsByKind)
            .slice(0, 4)
            .map(([kind, count]) => `${kind} ×${count}`)
            .join(', ')}`,
        ]),
    ...payloads
      .filter((site) => site.bytes > historyTargets.payloadBytes)
      .slice(0, 5)
      .map((site) => `${site.bytes} B in ${site.workflowId}, event ${site.eventId} ${site.event} of ${site.about || '?'} at ${site.path}`),
  ];
  return {
    scenario,
    landingId,
    workflows,
    largest: { workflowId: largest.workflowId, events: largest.events, eventsByKind, signalsByName: byCount(kinds.get(largest.workflowId)?.signalsByName) },
    biggestPayloads: payloads.slice(0, 5),
    targets: {
      events: { limit: historyTargets.events, largest: largest.events, met: eventsMet },
      payloadBytes: { limit: historyTargets.payloadBytes, biggest: biggest?.bytes ?? 0, met: payloadMet },
    },
    ...(whatIsBig.length ? { whatIsBig } : {}),
  };
}
