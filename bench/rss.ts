import { readFileSync } from 'node:fs';

/** A process's resident set now (`VmRSS`) and its peak since it started (`VmHWM`), in bytes, from /proc. */
function readRss(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
  return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
}

/**
 * Samples a process's RSS every `intervalMs` until stopped. The peak is the larger of the
 * highest sample and the growth of `VmHWM` during the run: a spike between two samples still
 * shows in VmHWM, but VmHWM alone would also count whatever the process did before the run.
 */
export function sampleRss(pid: number, intervalMs = 100) {
  const first = readRss(pid);
  let peakSample = first.rss;
  const timer = setInterval(() => {
    // A worker that died mid-run fails the landings; the sampler only stops counting.
    try {
      peakSample = Math.max(peakSample, readRss(pid).rss);
    } catch {
      clearInterval(timer);
    }
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      const last = readRss(pid);
      peakSample = Math.max(peakSample, last.rss);
      return { before: first.rss, peak: last.hwm > first.hwm ? last.hwm : peakSample, after: last.rss, lifetimePeak: last.hwm };
    },
  };
}
