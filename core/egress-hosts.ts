/**
 * The grammar of egress host entries: what the operator writes in `TARMAC_EGRESS_ALLOW` and a
 * repository in its environment's `egress`. Here in core, not in policies/egress.ts, because the
 * config loader (core/node) and the gate file's schema (core) read these entries and may not import
 * a floor above them; the egress policy builds its decisions on the same rules.
 *
 * An entry is a host name (`mirror.example.com`), or `*.` and a domain (`*.example.com`), which
 * allows every name below that domain but not the domain itself. Lowercase; a trailing dot is
 * dropped. Never an IP address, a port, a scheme or a path: the gateway reaches hosts by name, on
 * ports 443 and 80 only, and checks each name's addresses itself.
 */

type EgressHostParse = { ok: true; host: string } | { ok: false; message: string };
type EgressAllowParse = { ok: true; hosts: string[] } | { ok: false; entry: string; message: string };

const labelPattern = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * True when resolvers would read the name as an IPv4 address: its last label is a number
 * (`10.0.0.1`, `127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`), the rule URL parsers and
 * inet_aton follow. Such a name never goes to DNS, so no allow-list entry may look like one.
 */
export function endsInNumber(name: string): boolean {
  const last = name.replace(/\.$/, '').split('.').pop() ?? '';
  return /^(?:[0-9]+|0x[0-9a-f]*)$/i.test(last);
}

/** A name the gateway may look up: letters, digits and inner hyphens in labels of 1-63, at most 253 in all, not a number. */
export function isHostName(name: string): boolean {
  if (name.length === 0 || name.length > 253 || endsInNumber(name)) return false;
  return name.split('.').every((label) => labelPattern.test(label));
}

/** Does `host` (a normalised name) fall under `entry` (a parsed entry)? */
export function hostMatches(host: string, entry: string): boolean {
  return entry.startsWith('*.') ? host.endsWith(entry.slice(1)) : host === entry;
}

/** Lowercase, trimmed, without one trailing dot: the form names are compared in. */
export function normaliseHostName(text: string): string {
  return text.trim().toLowerCase().replace(/\.$/, '');
}

/** One entry, checked; the message names the entry and says what to write instead. */
export function parseEgressHost(entry: string): EgressHostParse {
  const text = entry.trim().toLowerCase();
  const fail = (why: string): EgressHostParse => ({ ok: false, message: `"${entry}" ${why}` });
  if (text === '') return fail('is empty');
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(text)) return fail('is a URL: write the host name alone, without a scheme');
  if (text.includes('/') || text.includes('@')) return fail('is not a host name (no paths or credentials): write the host name alone');
  if (text.startsWith('[') || text.split(':').length > 2) return fail('is an IP address: write host names (the gateway checks the addresses they resolve to)');
  if (text.includes(':')) return fail('names a port: write the host alone (the gateway allows ports 443 and 80)');
  if (text === '*') return fail('would allow every host: list the hosts, or "*." and a domain');
  const wildcard = text.startsWith('*.');
  const name = (wildcard ? text.slice(2) : text).replace(/\.$/, '');
  if (name.includes('*')) return fail('has a "*" that is not a leading "*.": a wildcard allows the names below one domain');
  if (name === '') return fail('has no domain after "*."');
  if (endsInNumber(name)) return fail('is an IP address: write host names (the gateway checks the addresses they resolve to)');
  if (name.split('.').some((label) => label === '')) return fail('has an empty label (two dots in a row, or a leading dot)');
  if (name.length > 253) return fail('is longer than 253 characters');
  const bad = name.split('.').find((label) => !labelPattern.test(label));
  if (bad !== undefined) return fail(`has the label "${bad}": labels are letters, digits and inner hyphens, 1-63 long`);
  return { ok: true, host: wildcard ? `*.${name}` : name };
}

/**
 * The operator's `TARMAC_EGRESS_ALLOW`: entries separated by commas or white space, each checked,
 * duplicates dropped. Empty text is an empty list (setups reach nothing). The first bad entry
 * stops the parse and is named.
 */
export function parseEgressAllow(text: string): EgressAllowParse {
  const hosts: string[] = [];
  for (const entry of text.split(/[\s,]+/).filter((part) => part !== '')) {
    const parsed = parseEgressHost(entry);
    if (!parsed.ok) return { ok: false, entry, message: parsed.message };
    if (!hosts.includes(parsed.host)) hosts.push(parsed.host);
  }
  return { ok: true, hosts };
}
