import { endsInNumber, hostMatches, isHostName, normaliseHostName, parseEgressHost } from '../core/egress-hosts';

export { parseEgressAllow } from '../core/egress-hosts';

/**
 * What an environment's setup may reach through the egress gateway. The gateway asks twice: before
 * anything is looked up (`egressDecision`: the name, the port, the allow-list), and after the name
 * is resolved (`addressDecision` for each address), because an allowed name can resolve to the
 * worker's own loopback or its private network (DNS rebinding). The gateway then connects to the
 * address it checked, never to the name again. Pure.
 */

/** Ports a setup may reach: HTTPS, and plain HTTP for apt-style mirrors. */
const egressPorts: readonly number[] = [443, 80];

export type AddressClass = 'loopback' | 'private' | 'link-local' | 'unspecified' | 'multicast' | 'reserved' | 'public';

export type EgressDecision = { allow: true; host: string } | { allow: false; reason: string };

interface EgressAllowNarrowing {
  /** The entries the setup may reach. */
  hosts: string[];
  /** Declared entries the operator's list does not cover (or that are not entries at all): left out. */
  refusedDeclared: string[];
}

/** Does the operator's entry cover every name the declared entry allows? */
function entryCovers(operator: string, declared: string): boolean {
  if (!declared.startsWith('*.')) return hostMatches(declared, operator);
  return operator.startsWith('*.') && (declared === operator || declared.endsWith(operator.slice(1)));
}

/**
 * The allow-list of one setup: the operator's list narrowed by what the repository declares, never
 * widened. With no declaration the operator's list holds; an empty declaration allows nothing.
 */
export function narrowAllow(operator: readonly string[], declared: readonly string[] | undefined): EgressAllowNarrowing {
  if (declared === undefined) return { hosts: [...operator], refusedDeclared: [] };
  const hosts: string[] = [];
  const refusedDeclared: string[] = [];
  for (const entry of declared) {
    const parsed = parseEgressHost(entry);
    if (parsed.ok && operator.some((allowed) => entryCovers(allowed, parsed.host))) {
      if (!hosts.includes(parsed.host)) hosts.push(parsed.host);
    } else refusedDeclared.push(entry);
  }
  return { hosts, refusedDeclared };
}

/** Splits a CONNECT target (`host:443`, `[::1]:443`); the port is undefined when none is named or it is not a number. */
export function splitAuthority(authority: string): { host: string; port: number | undefined } {
  const bracketed = /^(\[[^\]]*\])(?::([0-9]{1,5}))?$/.exec(authority);
  if (bracketed) return { host: bracketed[1]!, port: bracketed[2] === undefined ? undefined : Number(bracketed[2]) };
  const colons = authority.split(':').length - 1;
  if (colons !== 1) return { host: authority, port: undefined };
  const [host, port] = authority.split(':') as [string, string];
  return { host, port: /^[0-9]{1,5}$/.test(port) ? Number(port) : undefined };
}

/**
 * May the setup open a connection to `host:port`? Names only: an IP address in any spelling a
 * resolver accepts is refused before it can reach anything, so the only addresses reached are those
 * of allowed names, which `addressDecision` checks.
 */
export function egressDecision(input: { host: string; port: number | undefined; allow: readonly string[] }): EgressDecision {
  const host = normaliseHostName(input.host);
  const refuse = (reason: string): EgressDecision => ({ allow: false, reason });
  if (host === '') return refuse('the request names no host');
  if (host.startsWith('[') || host.includes(':') || endsInNumber(host)) return refuse(`${input.host} is an IP address: the gateway reaches hosts by name only`);
  if (!isHostName(host)) return refuse(`"${input.host.slice(0, 255)}" is not a valid host name`);
  if (input.port === undefined || !egressPorts.includes(input.port)) {
    return refuse(`${host}: port ${input.port ?? '(none)'} is not allowed (only ${egressPorts.join(' and ')})`);
  }
  if (!input.allow.some((entry) => hostMatches(host, entry))) return refuse(`${host} is not on the allow-list`);
  return { allow: true, host };
}

/** May the gateway connect to `address`, one of the addresses `host` resolved to? Only public ones. */
export function addressDecision(address: string, host?: string): EgressDecision {
  const kind = classifyAddress(address);
  const subject = host === undefined ? address : `${host} resolves to ${address}`;
  if (kind === undefined) return { allow: false, reason: `${subject}, which is not an IP address` };
  if (kind !== 'public') return { allow: false, reason: `${subject}, a ${kind} address: the gateway reaches public addresses only` };
  return { allow: true, host: host ?? address };
}

/** Four bytes of a dotted-quad address as DNS returns it (no leading zeros); undefined otherwise. */
function parseIpv4(text: string): number[] | undefined {
  if (!/^(?:0|[1-9][0-9]{0,2})(?:\.(?:0|[1-9][0-9]{0,2})){3}$/.test(text)) return undefined;
  const bytes = text.split('.').map(Number);
  return bytes.every((byte) => byte <= 255) ? bytes : undefined;
}

/** Eight 16-bit groups of an IPv6 address (`::` compression, a dotted-quad tail, a zone id dropped); undefined otherwise. */
function parseIpv6(text: string): number[] | undefined {
  const address = text.replace(/%[^%]*$/, '');
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string, last: boolean): number[] | undefined => {
    if (part === '') return [];
    const out: number[] = [];
    const pieces = part.split(':');
    for (const [index, piece] of pieces.entries()) {
      const quad = last && index === pieces.length - 1 && piece.includes('.') ? parseIpv4(piece) : undefined;
      if (quad) out.push((quad[0]! << 8) | quad[1]!, (quad[2]! << 8) | quad[3]!);
      else if (/^[0-9a-f]{1,4}$/i.test(piece)) out.push(parseInt(piece, 16));
      else return undefined;
    }
    return out;
  };
  const head = groups(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? groups(halves[1]!, true) : [];
  if (!head || !tail) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const missing = 8 - head.length - tail.length;
  return missing >= 1 ? [...head, ...new Array<number>(missing).fill(0), ...tail] : undefined;
}

function classifyIpv4(bytes: number[]): AddressClass {
  const [a = 0, b = 0, c = 0] = bytes;
  if (a === 0) return 'unspecified';
  if (a === 127) return 'loopback';
  if (a === 169 && b === 254) return 'link-local';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  // Carrier-grade NAT, the IETF's protocol block and the benchmarking range: not reachable from the internet either.
  if ((a === 100 && b >= 64 && b <= 127) || (a === 192 && b === 0 && c === 0) || (a === 198 && (b === 18 || b === 19))) return 'private';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a >= 240) return 'reserved';
  // The documentation ranges (192.0.2/24, 198.51.100/24, 203.0.113/24) stay public: this machine's registries resolve there.
  return 'public';
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64 or 6to4), as four bytes. */
function embeddedIpv4(groups: number[]): number[] | undefined {
  const bytes = (high: number, low: number) => [high >> 8, high & 0xff, low >> 8, low & 0xff];
  const zeros = (from: number, to: number) => groups.slice(from, to).every((group) => group === 0);
  if (zeros(0, 5) && groups[5] === 0xffff) return bytes(groups[6]!, groups[7]!);
  if (zeros(0, 6)) return bytes(groups[6]!, groups[7]!);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return bytes(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return bytes(groups[1]!, groups[2]!);
  return undefined;
}

function classifyIpv6(groups: number[]): AddressClass {
  const first = groups[0]!;
  if (groups.every((group) => group === 0)) return 'unspecified';
  if (groups.slice(0, 7).every((group) => group === 0) && groups[7] === 1) return 'loopback';
  // An IPv4 address inside an IPv6 one reaches that IPv4 address (or its translator's view of it): judge it as such.
  const inner = embeddedIpv4(groups);
  if (inner) return classifyIpv4(inner);
  if ((first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfec0) return 'private';
  if ((first & 0xffc0) === 0xfe80) return 'link-local';
  if ((first & 0xff00) === 0xff00) return 'multicast';
  if (first === 0x64 && groups[1] === 0xff9b && groups[2] === 1) return 'private';
  if (first === 0x100 && groups.slice(1, 4).every((group) => group === 0)) return 'reserved';
  return 'public';
}

/** What kind of address `ip` is (IPv4 or IPv6); undefined when it is not an IP address. */
export function classifyAddress(ip: string): AddressClass | undefined {
  const v4 = parseIpv4(ip);
  if (v4) return classifyIpv4(v4);
  const v6 = parseIpv6(ip);
  return v6 ? classifyIpv6(v6) : undefined;
}
