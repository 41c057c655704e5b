import { mkdir, open, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Sizes the model transcript holds to. */
export const transcriptLimits = {
  /** A request or response body larger than this keeps its first quarter and last three quarters of it. */
  bodyChars: 256 * 1024,
  /** Past this size the transcript keeps one line per exchange without bodies. */
  fileBytes: 64 * 1024 * 1024,
} as const;

/**
 * A body as the transcript keeps it: parsed JSON when it is JSON and small enough,
 * else text; a large one is cut in the middle (the end of a conversation is the part a
 * reader wants) and says how much was dropped.
 */
export function transcriptBody(raw: Buffer | string | undefined, maxChars: number = transcriptLimits.bodyChars): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  const bytes = typeof raw === 'string' ? Buffer.byteLength(raw) : raw.length;
  if (text.length <= maxChars) {
    try {
      return { bytes, json: JSON.parse(text) as unknown };
    } catch {
      return { bytes, text };
    }
  }
  const head = Math.floor(maxChars / 4);
  const tail = maxChars - head;
  return { bytes, text: `${text.slice(0, head)}\n[… ${text.length - maxChars} characters dropped …]\n${text.slice(text.length - tail)}`, truncated: true };
}

/**
 * The model gateway's transcript: one JSON line per exchange, appended in order. Every
 * line is scrubbed of the secrets it is given before it is written (whatever echoed
 * them), and the file stops taking bodies at its cap.
 */
export class ModelTranscript {
  private chain: Promise<void> = Promise.resolve();
  private bytes = 0;

  private constructor(
    readonly path: string,
    private readonly secrets: string[],
    private readonly maxBytes: number,
  ) {}

  static async open(path: string, secrets: (string | undefined)[], maxBytes: number = transcriptLimits.fileBytes): Promise<ModelTranscript> {
    await mkdir(dirname(path), { recursive: true });
    // Short strings are not secrets worth scrubbing (and would mangle everything).
    const kept = secrets.filter((secret): secret is string => typeof secret === 'string' && secret.length >= 8);
    const transcript = new ModelTranscript(path, [...new Set(kept.flatMap((secret) => [secret, JSON.stringify(secret).slice(1, -1)]))], maxBytes);
    transcript.bytes = await stat(path).then(
      (info) => info.size,
      () => 0,
    );
    return transcript;
  }

  private scrub(line: string): string {
    let clean = line;
    for (const secret of this.secrets) clean = clean.split(secret).join('[key removed]');
    return clean;
  }

  /** Appends an entry; `bodies` names the fields dropped once the file is at its cap. */
  append(entry: Record<string, unknown>, bodies: string[] = ['request', 'response']): Promise<void> {
    const write = async () => {
      let line = this.scrub(JSON.stringify(entry));
      if (this.bytes + line.length > this.maxBytes) {
        const slim: Record<string, unknown> = { ...entry, bodiesDropped: `the transcript reached its cap of ${this.maxBytes} bytes` };
        for (const field of bodies) delete slim[field];
        line = this.scrub(JSON.stringify(slim));
      }
      const handle = await open(this.path, 'a', 0o600);
      try {
        await handle.write(`${line}\n`);
      } finally {
        await handle.close();
      }
      this.bytes += Buffer.byteLength(line) + 1;
    };
    this.chain = this.chain.then(write, write);
    return this.chain;
  }

  /** Resolves when every entry appended so far is written. */
  flush(): Promise<void> {
    return this.chain.catch(() => undefined);
  }
}
