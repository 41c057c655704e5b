/** The run page's small shared pieces: section frames, marker badges, short forms of shas and times. */
import type { ComponentChildren } from 'preact';
import type { Marker } from './model';

const markerText: Record<Marker, string> = {
  skipped: 'skipped',
  cached: 'cached',
  'partly-cached': 'partly cached',
  respawned: 'respawned',
  reattached: 'reattached',
  superseded: 'superseded',
  escalated: 'escalated',
  failed: 'failed',
  running: 'running',
  asked: 'asked',
  flaky: 'flaky: green when run again',
  'pre-existing': 'pre-existing: red on the base too',
  'failed-again': 'red again, green on the base',
  quarantined: 'quarantined',
  batched: 'merged in a batch',
  culprit: "a batch's culprit",
};

export function Markers({ markers }: { markers: readonly Marker[] }) {
  return (
    <>
      {markers.map((marker) => (
        <span class={`badge badge-${marker}`} data-marker={marker}>
          {markerText[marker]}
        </span>
      ))}
    </>
  );
}

export function Section({ id, title, children }: { id: string; title: string; children: ComponentChildren }) {
  return (
    <section aria-labelledby={`${id}-title`} id={id} data-section={id}>
      <h2 id={`${id}-title`}>{title}</h2>
      {children}
    </section>
  );
}

export const short = (sha: string | undefined) => (sha ? sha.slice(0, 10) : '');
export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
export const basename = (path: string) => path.split('/').at(-1) ?? path;
export const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
