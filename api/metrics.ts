import type { Client } from '@temporalio/client';
import { LandingPhase, LandingStatus } from '../core/types';

/** Prometheus text exposition: one metric family with its HELP and TYPE lines. */
interface MetricFamily {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: { labels: Record<string, string>; value: number }[];
}

const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

/** Renders metric families in the Prometheus text format (version 0.0.4). Pure. */
export function renderMetrics(families: MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) {
      const labels = Object.entries(sample.labels)
        .map(([key, value]) => `${key}="${escapeLabel(value)}"`)
        .join(',');
      lines.push(`${family.name}${labels ? `{${labels}}` : ''} ${Number.isFinite(sample.value) ? sample.value : 0}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** HTTP requests the API answered, by method, route pattern and status. */
export class RequestCounter {
  private readonly counts = new Map<string, { method: string; route: string; status: string; value: number }>();

  count(method: string, route: string, status: number): void {
    const key = `${method} ${route} ${status}`;
    const entry = this.counts.get(key) ?? { method, route, status: String(status), value: 0 };
    entry.value += 1;
    this.counts.set(key, entry);
  }

  family(): MetricFamily {
    return {
      name: 'tarmac_api_requests_total',
      help: 'HTTP requests answered by the API, by method, route and status.',
      type: 'counter',
      samples: [...this.counts.values()].map(({ method, route, status, value }) => ({ labels: { method, route, status }, value })),
    };
  }
}

/**
 * Landings as Temporal's visibility store counts them: finished ones by outcome, running
 * ones by phase. Counted at scrape time, so they survive restarts of everything.
 */
export async function landingFamilies(client: Client): Promise<MetricFamily[]> {
  const count = async (query: string) => (await client.workflow.count(query)).count;
  const outcomes = await Promise.all(
    Object.values(LandingStatus).map(async (outcome) => ({
      labels: { outcome },
      value: await count(`TarmacKind = 'landing' AND TarmacOutcome = '${outcome}'`),
    })),
  );
  const phases = await Promise.all(
    Object.values(LandingPhase).map(async (phase) => ({
      labels: { phase },
      value: await count(`TarmacKind = 'landing' AND ExecutionStatus = 'Running' AND TarmacPhase = '${phase}'`),
    })),
  );
  return [
    { name: 'tarmac_landings', help: 'Landings with an outcome, by outcome (from Temporal visibility).', type: 'gauge', samples: outcomes },
    { name: 'tarmac_landings_running', help: 'Running landings, by phase (from Temporal visibility).', type: 'gauge', samples: phases },
  ];
}
