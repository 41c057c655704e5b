import type Docker from 'dockerode';
import { availabilityReport, providerKeys, type AgentAvailability, type AvailabilityFacts } from '../../core/agent-availability';
import type { ModelProvider } from '../../core/model-pricing';
import type { Harness } from '../../core/recipe-schemas';
import { defaultModelUpstreams } from '../gateways/model-protocol';

interface AvailabilityDeps {
  docker: Docker;
  /** The worker's environment (keys are looked at, never copied). */
  secrets: NodeJS.ProcessEnv;
  modelUpstreams: Record<ModelProvider, string>;
}

/**
 * What this worker has: which images its Docker engine holds, and which providers its model
 * gateway can reach — the key is set, or the operator pointed the provider at an upstream of
 * their own (a local or internal endpoint that may take no key). Key values are never returned.
 */
export async function availabilityFacts(deps: AvailabilityDeps, harnesses: Record<string, Pick<Harness, 'image'>>): Promise<AvailabilityFacts> {
  const images = new Set<string>();
  for (const image of new Set(Object.values(harnesses).map((harness) => harness.image))) {
    const present = await deps.docker
      .getImage(image)
      .inspect()
      .then(() => true)
      .catch(() => false);
    if (present) images.add(image);
  }
  const providers = new Set<ModelProvider>();
  for (const provider of Object.keys(providerKeys) as ModelProvider[]) {
    if (deps.secrets[providerKeys[provider]] || deps.modelUpstreams[provider] !== defaultModelUpstreams[provider]) providers.add(provider);
  }
  return { images, providers };
}

/** Every harness#model of the registry, with whether this worker can run it and, if not, what is missing. */
export async function workerAgents(
  deps: AvailabilityDeps,
  harnesses: Record<string, Pick<Harness, 'image' | 'adapter' | 'models'>>,
): Promise<Record<string, AgentAvailability>> {
  return availabilityReport(harnesses, await availabilityFacts(deps, harnesses));
}
