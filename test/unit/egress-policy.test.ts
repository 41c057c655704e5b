import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addressDecision,
  classifyAddress,
  egressDecision,
  narrowAllow,
  parseEgressAllow,
  splitAuthority,
  type AddressClass,
  type EgressDecision,
} from '../../policies/egress';

// Example names only (example.com and .test are reserved for this): the real registries' hosts are never written here.

const allowTable: { name: string; input: string; expected: ReturnType<typeof parseEgressAllow> }[] = [
  { name: 'empty: nothing is allowed', input: '', expected: { ok: true, hosts: [] } },
  {
    name: 'commas, spaces and newlines separate; lowercased; trailing dot dropped; duplicates dropped',
    input: ' Mirror.Example.com, files.example.com\n\tmirror.example.com. ',
    expected: { ok: true, hosts: ['mirror.example.com', 'files.example.com'] },
  },
  { name: 'a leading *. allows subdomains', input: '*.Example.com', expected: { ok: true, hosts: ['*.example.com'] } },
  { name: 'a single label is a name', input: 'localhost', expected: { ok: true, hosts: ['localhost'] } },
  {
    name: 'an IPv4 address is refused',
    input: 'mirror.example.com, 10.0.0.1',
    expected: { ok: false, entry: '10.0.0.1', message: '"10.0.0.1" is an IP address: write host names (the gateway checks the addresses they resolve to)' },
  },
  {
    name: 'a decimal IPv4 is refused',
    input: '2130706433',
    expected: { ok: false, entry: '2130706433', message: '"2130706433" is an IP address: write host names (the gateway checks the addresses they resolve to)' },
  },
  {
    name: 'an IPv6 address is refused',
    input: '::1',
    expected: { ok: false, entry: '::1', message: '"::1" is an IP address: write host names (the gateway checks the addresses they resolve to)' },
  },
  {
    name: 'a bracketed IPv6 address is refused',
    input: '[fe80::1]',
    expected: { ok: false, entry: '[fe80::1]', message: '"[fe80::1]" is an IP address: write host names (the gateway checks the addresses they resolve to)' },
  },
  {
    name: 'a port is refused',
    input: 'mirror.example.com:8443',
    expected: {
      ok: false,
      entry: 'mirror.example.com:8443',
      message: '"mirror.example.com:8443" names a port: write the host alone (the gateway allows ports 443 and 80)',
    },
  },
  {
    name: 'a scheme is refused',
    input: 'https://mirror.example.com',
    expected: { ok: false, entry: 'https://mirror.example.com', message: '"https://mirror.example.com" is a URL: write the host name alone, without a scheme' },
  },
  {
    name: 'a path is refused',
    input: 'mirror.example.com/simple',
    expected: {
      ok: false,
      entry: 'mirror.example.com/simple',
      message: '"mirror.example.com/simple" is not a host name (no paths or credentials): write the host name alone',
    },
  },
  {
    name: 'an empty label is refused',
    input: 'mirror..example.com',
    expected: { ok: false, entry: 'mirror..example.com', message: '"mirror..example.com" has an empty label (two dots in a row, or a leading dot)' },
  },
  {
    name: 'a leading dot is refused',
    input: '.example.com',
    expected: { ok: false, entry: '.example.com', message: '".example.com" has an empty label (two dots in a row, or a leading dot)' },
  },
  { name: 'a bare * is refused', input: '*', expected: { ok: false, entry: '*', message: '"*" would allow every host: list the hosts, or "*." and a domain' } },
  {
    name: 'a wildcard inside is refused',
    input: 'mirror.*.example.com',
    expected: {
      ok: false,
      entry: 'mirror.*.example.com',
      message: '"mirror.*.example.com" has a "*" that is not a leading "*.": a wildcard allows the names below one domain',
    },
  },
  {
    name: 'a bad character is refused, naming the label',
    input: 'mirror_1.example.com',
    expected: {
      ok: false,
      entry: 'mirror_1.example.com',
      message: '"mirror_1.example.com" has the label "mirror_1": labels are letters, digits and inner hyphens, 1-63 long',
    },
  },
];

const narrowTable: { name: string; input: { operator: string[]; declared: string[] | undefined }; expected: ReturnType<typeof narrowAllow> }[] = [
  {
    name: "no declaration: the operator's list",
    input: { operator: ['a.example.com', '*.example.org'], declared: undefined },
    expected: { hosts: ['a.example.com', '*.example.org'], refusedDeclared: [] },
  },
  { name: 'an empty declaration allows nothing', input: { operator: ['a.example.com'], declared: [] }, expected: { hosts: [], refusedDeclared: [] } },
  {
    name: 'narrowed to the declared hosts the operator allows',
    input: { operator: ['a.example.com', 'b.example.com'], declared: ['B.example.com'] },
    expected: { hosts: ['b.example.com'], refusedDeclared: [] },
  },
  {
    name: "a declared host off the operator's list is refused, never added",
    input: { operator: ['a.example.com'], declared: ['a.example.com', 'evil.example.net'] },
    expected: { hosts: ['a.example.com'], refusedDeclared: ['evil.example.net'] },
  },
  {
    name: 'an operator wildcard covers a declared name below it',
    input: { operator: ['*.example.com'], declared: ['files.example.com'] },
    expected: { hosts: ['files.example.com'], refusedDeclared: [] },
  },
  {
    name: 'an operator wildcard covers a narrower declared wildcard',
    input: { operator: ['*.example.com'], declared: ['*.cdn.example.com', '*.example.com'] },
    expected: { hosts: ['*.cdn.example.com', '*.example.com'], refusedDeclared: [] },
  },
  {
    name: 'an operator wildcard does not cover its own domain',
    input: { operator: ['*.example.com'], declared: ['example.com'] },
    expected: { hosts: [], refusedDeclared: ['example.com'] },
  },
  {
    name: 'a declared wildcard is not covered by an operator name: that would widen',
    input: { operator: ['cdn.example.com'], declared: ['*.example.com'] },
    expected: { hosts: [], refusedDeclared: ['*.example.com'] },
  },
  {
    name: 'a declared entry that is not a host is refused',
    input: { operator: ['a.example.com'], declared: ['https://a.example.com'] },
    expected: { hosts: [], refusedDeclared: ['https://a.example.com'] },
  },
];

const addressTable: { name: string; input: string; expected: AddressClass | undefined }[] = [
  { name: 'IPv4 loopback', input: '127.0.0.1', expected: 'loopback' },
  { name: 'IPv4 loopback, all of 127/8', input: '127.255.0.9', expected: 'loopback' },
  { name: '10/8', input: '10.1.2.3', expected: 'private' },
  { name: '172.16/12 low end', input: '172.16.0.1', expected: 'private' },
  { name: '172.16/12 high end', input: '172.31.255.255', expected: 'private' },
  { name: 'just outside 172.16/12', input: '172.32.0.1', expected: 'public' },
  { name: '192.168/16', input: '192.168.1.1', expected: 'private' },
  { name: 'carrier-grade NAT 100.64/10', input: '100.64.0.1', expected: 'private' },
  { name: 'just outside 100.64/10', input: '100.128.0.1', expected: 'public' },
  { name: 'link-local, the cloud metadata address', input: '169.254.169.254', expected: 'link-local' },
  { name: '0.0.0.0', input: '0.0.0.0', expected: 'unspecified' },
  { name: 'anything in 0/8', input: '0.1.2.3', expected: 'unspecified' },
  { name: 'multicast', input: '224.0.0.251', expected: 'multicast' },
  { name: 'broadcast', input: '255.255.255.255', expected: 'reserved' },
  { name: 'a documentation range is public (the registries resolve there on this machine)', input: '203.0.113.80', expected: 'public' },
  { name: 'another documentation range', input: '198.51.100.7', expected: 'public' },
  { name: 'an ordinary public IPv4', input: '8.8.8.8', expected: 'public' },
  { name: 'IPv6 loopback', input: '::1', expected: 'loopback' },
  { name: 'IPv6 loopback written out', input: '0:0:0:0:0:0:0:1', expected: 'loopback' },
  { name: 'IPv6 unspecified', input: '::', expected: 'unspecified' },
  { name: 'IPv4-mapped loopback', input: '::ffff:127.0.0.1', expected: 'loopback' },
  { name: 'IPv4-mapped loopback in hex', input: '::ffff:7f00:1', expected: 'loopback' },
  { name: 'IPv4-mapped private', input: '::FFFF:10.0.0.1', expected: 'private' },
  { name: 'IPv4-mapped public', input: '::ffff:203.0.113.80', expected: 'public' },
  { name: 'NAT64 of a private IPv4', input: '64:ff9b::a00:1', expected: 'private' },
  { name: '6to4 of loopback', input: '2002:7f00:1::', expected: 'loopback' },
  { name: 'unique local fc00::/7 (fd)', input: 'fd12:3456::1', expected: 'private' },
  { name: 'unique local fc00::/7 (fc)', input: 'fc00::1', expected: 'private' },
  { name: 'link-local fe80::/10', input: 'fe80::1', expected: 'link-local' },
  { name: 'link-local with a zone', input: 'fe80::1%eth0', expected: 'link-local' },
  { name: 'link-local upper end of fe80::/10', input: 'febf::1', expected: 'link-local' },
  { name: 'IPv6 multicast', input: 'ff02::1', expected: 'multicast' },
  { name: 'a public IPv6', input: '2606:4700::1111', expected: 'public' },
  { name: "IPv6 documentation is public like IPv4's", input: '2001:db8::1', expected: 'public' },
  { name: 'a name is not an address', input: 'localhost', expected: undefined },
  { name: 'a decimal form is not an address here (DNS never answers one)', input: '2130706433', expected: undefined },
  { name: 'leading zeros are not an address here', input: '127.000.000.001', expected: undefined },
  { name: 'an octet over 255', input: '256.1.1.1', expected: undefined },
  { name: 'two :: are not an address', input: '1::2::3', expected: undefined },
  { name: 'nine groups are not an address', input: '1:2:3:4:5:6:7:8:9', expected: undefined },
];

const allow = ['mirror.example.com', '*.example.org', 'localhost'];
const ipReason = (host: string): EgressDecision => ({ allow: false, reason: `${host} is an IP address: the gateway reaches hosts by name only` });
const decisionTable: { name: string; input: { host: string; port: number | undefined }; expected: EgressDecision }[] = [
  { name: 'an allowed host on 443', input: { host: 'mirror.example.com', port: 443 }, expected: { allow: true, host: 'mirror.example.com' } },
  { name: 'an allowed host on 80, normalised', input: { host: 'Mirror.Example.com.', port: 80 }, expected: { allow: true, host: 'mirror.example.com' } },
  { name: 'a subdomain under a wildcard', input: { host: 'files.cdn.example.org', port: 443 }, expected: { allow: true, host: 'files.cdn.example.org' } },
  {
    name: "the wildcard's own domain is not under it",
    input: { host: 'example.org', port: 443 },
    expected: { allow: false, reason: 'example.org is not on the allow-list' },
  },
  { name: 'a host off the list', input: { host: 'example.com', port: 443 }, expected: { allow: false, reason: 'example.com is not on the allow-list' } },
  {
    name: 'a suffix that is not a subdomain',
    input: { host: 'evilexample.org', port: 443 },
    expected: { allow: false, reason: 'evilexample.org is not on the allow-list' },
  },
  {
    name: 'an allowed name as a prefix of another domain',
    input: { host: 'mirror.example.com.evil.test', port: 443 },
    expected: { allow: false, reason: 'mirror.example.com.evil.test is not on the allow-list' },
  },
  {
    name: 'port 22 on an allowed host',
    input: { host: 'mirror.example.com', port: 22 },
    expected: { allow: false, reason: 'mirror.example.com: port 22 is not allowed (only 443 and 80)' },
  },
  {
    name: 'no port',
    input: { host: 'mirror.example.com', port: undefined },
    expected: { allow: false, reason: 'mirror.example.com: port (none) is not allowed (only 443 and 80)' },
  },
  { name: 'IPv4 literal', input: { host: '127.0.0.1', port: 443 }, expected: ipReason('127.0.0.1') },
  { name: 'decimal IPv4', input: { host: '2130706433', port: 443 }, expected: ipReason('2130706433') },
  { name: 'hex IPv4', input: { host: '0x7f000001', port: 443 }, expected: ipReason('0x7f000001') },
  { name: 'octal IPv4', input: { host: '0177.0.0.1', port: 443 }, expected: ipReason('0177.0.0.1') },
  { name: 'short IPv4', input: { host: '127.1', port: 443 }, expected: ipReason('127.1') },
  { name: 'bracketed IPv6', input: { host: '[::1]', port: 443 }, expected: ipReason('[::1]') },
  { name: 'bare IPv6', input: { host: '::ffff:127.0.0.1', port: 443 }, expected: ipReason('::ffff:127.0.0.1') },
  { name: 'empty host', input: { host: '', port: 443 }, expected: { allow: false, reason: 'the request names no host' } },
  {
    name: 'malformed host',
    input: { host: 'mirror example.com', port: 443 },
    expected: { allow: false, reason: '"mirror example.com" is not a valid host name' },
  },
  {
    name: 'an underscore is malformed',
    input: { host: 'a_b.example.org', port: 443 },
    expected: { allow: false, reason: '"a_b.example.org" is not a valid host name' },
  },
  {
    name: 'localhost by name passes this check (its address is checked next)',
    input: { host: 'localhost', port: 443 },
    expected: { allow: true, host: 'localhost' },
  },
];

const resolvedTable: { name: string; input: { address: string; host?: string }; expected: EgressDecision }[] = [
  { name: 'a public address', input: { address: '203.0.113.80', host: 'mirror.example.com' }, expected: { allow: true, host: 'mirror.example.com' } },
  {
    name: 'rebinding to loopback',
    input: { address: '127.0.0.1', host: 'mirror.example.com' },
    expected: { allow: false, reason: 'mirror.example.com resolves to 127.0.0.1, a loopback address: the gateway reaches public addresses only' },
  },
  {
    name: 'rebinding to the metadata address',
    input: { address: '169.254.169.254', host: 'mirror.example.com' },
    expected: { allow: false, reason: 'mirror.example.com resolves to 169.254.169.254, a link-local address: the gateway reaches public addresses only' },
  },
  {
    name: 'IPv6 unique local',
    input: { address: 'fd00::5', host: 'mirror.example.com' },
    expected: { allow: false, reason: 'mirror.example.com resolves to fd00::5, a private address: the gateway reaches public addresses only' },
  },
  {
    name: 'no host named',
    input: { address: '10.0.0.1' },
    expected: { allow: false, reason: '10.0.0.1, a private address: the gateway reaches public addresses only' },
  },
  {
    name: 'not an address',
    input: { address: 'nonsense', host: 'mirror.example.com' },
    expected: { allow: false, reason: 'mirror.example.com resolves to nonsense, which is not an IP address' },
  },
];

const authorityTable: { name: string; input: string; expected: ReturnType<typeof splitAuthority> }[] = [
  { name: 'host and port', input: 'mirror.example.com:443', expected: { host: 'mirror.example.com', port: 443 } },
  { name: 'no port', input: 'mirror.example.com', expected: { host: 'mirror.example.com', port: undefined } },
  { name: 'a port that is not a number', input: 'mirror.example.com:https', expected: { host: 'mirror.example.com', port: undefined } },
  { name: 'bracketed IPv6 and port', input: '[::1]:443', expected: { host: '[::1]', port: 443 } },
  { name: 'bare IPv6: the whole is the host', input: '::1', expected: { host: '::1', port: undefined } },
];

describe('egress policy', () => {
  describe('parseEgressAllow', () => {
    for (const { name, input, expected } of allowTable) it(name, () => assert.deepEqual(parseEgressAllow(input), expected));
  });
  describe('narrowAllow', () => {
    for (const { name, input, expected } of narrowTable) it(name, () => assert.deepEqual(narrowAllow(input.operator, input.declared), expected));
  });
  describe('classifyAddress', () => {
    for (const { name, input, expected } of addressTable) it(`${name} (${input})`, () => assert.equal(classifyAddress(input), expected));
  });
  describe('egressDecision', () => {
    for (const { name, input, expected } of decisionTable) it(name, () => assert.deepEqual(egressDecision({ ...input, allow }), expected));
  });
  describe('addressDecision', () => {
    for (const { name, input, expected } of resolvedTable) it(name, () => assert.deepEqual(addressDecision(input.address, input.host), expected));
  });
  describe('splitAuthority', () => {
    for (const { name, input, expected } of authorityTable) it(name, () => assert.deepEqual(splitAuthority(input), expected));
  });
});
