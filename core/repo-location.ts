/**
 * Repository locations: what a request may name as `repo`, in one canonical form, and
 * whether the operator's allow-list (`TARMAC_REPO_ALLOW`) admits it. Pure: no I/O (the
 * API resolves symbolic links of local paths itself, see api/repo.ts).
 *
 * Kinds, and what each canonicalises to:
 * - local: an absolute path (`/srv/repos/a.git`) or a `file://` URL (`file:///srv/repos/a.git`);
 *   both are the same location for the allow-list. Relative paths are refused: the server
 *   would resolve them against its own directory.
 * - url: `https://`, `http://`, `ssh://`, `git://` with a host (lower-cased; default port dropped).
 * - scp: `[user@]host:path`, git's ssh shorthand.
 *
 * Refused outright, never repaired: credentials in the location (a silently stripped token
 * would still have passed through the request, and the user would not learn to stop sending
 * it), `..` segments, percent-encoded dots and slashes (git decodes `%2e%2e` back into `..`),
 * git's remote-helper syntax (`ext::sh -c …` runs a command), other schemes, a leading `-`.
 */

const gitProtocols = ['file', 'https', 'http', 'ssh', 'git'] as const;
type GitProtocol = (typeof gitProtocols)[number];

const remoteSchemes = ['https', 'http', 'ssh', 'git'] as const;
type RemoteScheme = (typeof remoteSchemes)[number];
const defaultPorts: Record<RemoteScheme, number> = { https: 443, http: 80, ssh: 22, git: 9418 };

export type RepoLocation =
  | { kind: 'local'; form: 'path' | 'file-url'; segments: readonly string[] }
  | { kind: 'url'; scheme: RemoteScheme; user?: string; host: string; port?: number; segments: readonly string[] }
  | { kind: 'scp'; user?: string; host: string; absolute: boolean; segments: readonly string[] };

type RepoLocationParse = { ok: true; location: RepoLocation; canonical: string } | { ok: false; problem: string };

/** What to do instead of putting a secret in the location; part of every credentials refusal. */
const credentialsAdvice =
  'must not carry credentials (user:password@ or token@): give the location without them and let the worker authenticate with a git credential helper or its environment (an SSH key, GIT_ASKPASS)';

const urlPattern = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s;
const userPattern = /^[A-Za-z0-9._-]+$/;
const hostPattern = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$|^\[[0-9a-f:.]+\]$/;

/** True when `text` is a local path (absolute or relative) rather than a URL, scp form or remote helper. */
export function isLocalPathText(text: string): boolean {
  if (urlPattern.test(text) || /^[A-Za-z0-9+.-]+::/.test(text)) return false;
  // git's own rule: a colon before the first slash makes `host:path` an ssh location.
  const colon = text.indexOf(':');
  const slash = text.indexOf('/');
  return colon < 0 || (slash >= 0 && slash < colon);
}

/** Parses and canonicalises a repository location; the problem, when refused, reads after the field name. */
export function parseRepoLocation(text: string): RepoLocationParse {
  const refused = (problem: string): RepoLocationParse => ({ ok: false, problem });
  if (text.length === 0) return refused('must not be empty');
  if (/\p{Cc}/u.test(text)) return refused('must not contain control characters');
  // Before anything that could echo the text: a secret must not come back in a message.
  if (carriesCredentials(text)) return refused(credentialsAdvice);
  if (text.startsWith('-')) return refused('must not start with "-"');
  if (/^[A-Za-z0-9+.-]+::/.test(text))
    return refused(
      'uses git\'s remote-helper syntax ("transport::address", e.g. ext::), which can run commands; give a path or a file://, https://, http://, ssh:// or git:// URL',
    );
  if (/%(2e|2f|5c)/i.test(text)) return refused('must not contain percent-encoded dots or slashes (%2e, %2f, %5c)');
  if (text.includes('\\')) return refused('must not contain backslashes');

  const url = urlPattern.exec(text);
  if (url) return parseUrl(url[1]!.toLowerCase(), url[2]!, url[3]!);
  if (!isLocalPathText(text)) return parseScp(text);
  if (!text.startsWith('/'))
    return refused('must be an absolute path or a URL (a relative path would be resolved on the server; the CLI makes paths absolute)');
  const segments = pathSegments(text.split('/'));
  return 'problem' in segments ? refused(segments.problem) : done({ kind: 'local', form: 'path', segments });
}

function done(location: RepoLocation): RepoLocationParse {
  return { ok: true, location, canonical: formatRepoLocation(location) };
}

/** Credentials: userinfo with a password anywhere, or any userinfo but an ssh user name. */
function carriesCredentials(text: string): boolean {
  const url = urlPattern.exec(text);
  if (url) {
    const at = url[2]!.lastIndexOf('@');
    if (at < 0) return false;
    const userinfo = url[2]!.slice(0, at);
    return url[1]!.toLowerCase() !== 'ssh' || !userPattern.test(userinfo);
  }
  if (text.startsWith('/')) return false;
  const head = text.split('/')[0]!;
  const at = head.lastIndexOf('@');
  return at >= 0 && !userPattern.test(head.slice(0, at));
}

function parseUrl(scheme: string, authority: string, rest: string): RepoLocationParse {
  const refused = (problem: string): RepoLocationParse => ({ ok: false, problem });
  if (rest.includes('?') || rest.includes('#')) return refused('must not contain a query (?) or fragment (#)');
  const decoded = decodeSegments(rest.split('/'));
  if ('problem' in decoded) return refused(decoded.problem);
  const segments = pathSegments(decoded.segments);
  if ('problem' in segments) return refused(segments.problem);
  if (scheme === 'file') {
    if (authority !== '' && authority.toLowerCase() !== 'localhost') return refused('must be a file:// URL without a host (file:///path)');
    return done({ kind: 'local', form: 'file-url', segments });
  }
  if (!(remoteSchemes as readonly string[]).includes(scheme))
    return refused(`uses the scheme "${scheme}:", which Tarmac does not allow (allowed: file, https, http, ssh, git)`);
  const at = authority.lastIndexOf('@');
  const user = at >= 0 ? authority.slice(0, at) : undefined;
  const hostPort = /^(\[[^\]]*\]|[^:]*)(?::([0-9]{1,5}))?$/.exec(authority.slice(at + 1));
  const host = hostPort?.[1]?.toLowerCase() ?? '';
  if (!hostPort || !hostPattern.test(host)) return refused('must name a valid host');
  const port = hostPort[2] === undefined ? undefined : Number(hostPort[2]);
  if (port !== undefined && (port < 1 || port > 65535)) return refused('must name a port between 1 and 65535');
  if (segments.length === 0) return refused('must name a repository path on the host');
  const typed = scheme as RemoteScheme;
  return done({
    kind: 'url',
    scheme: typed,
    ...(user ? { user } : {}),
    host,
    ...(port === undefined || port === defaultPorts[typed] ? {} : { port }),
    segments,
  });
}

function parseScp(text: string): RepoLocationParse {
  const match = /^(?:([^@/:]+)@)?([^@/:]+):(.*)$/s.exec(text);
  const host = match?.[2]?.toLowerCase() ?? '';
  if (!match || !hostPattern.test(host)) return { ok: false, problem: 'must be an absolute path, a URL or user@host:path with a valid host' };
  // scp-style paths are not percent-decoded by git: their segments are taken literally.
  const segments = pathSegments(match[3]!.split('/'));
  if ('problem' in segments) return { ok: false, problem: segments.problem };
  if (segments.length === 0) return { ok: false, problem: 'must name a repository path on the host' };
  return done({ kind: 'scp', ...(match[1] ? { user: match[1] } : {}), host, absolute: match[3]!.startsWith('/'), segments });
}

/** Strict percent-decoding, one segment at a time (an encoded slash was refused before). */
function decodeSegments(raw: readonly string[]): { segments: string[] } | { problem: string } {
  const segments: string[] = [];
  for (const segment of raw) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return { problem: 'has an invalid percent-encoding' };
    }
    if (/\p{Cc}/u.test(decoded)) return { problem: 'must not contain control characters' };
    segments.push(decoded);
  }
  return { segments };
}

/** Empty and `.` segments are dropped (they name the same place); `..` is refused, never resolved. */
function pathSegments(raw: readonly string[]): string[] | { problem: string } {
  if (raw.some((segment) => segment === '..')) return { problem: 'must not contain ".." segments' };
  return raw.filter((segment) => segment !== '' && segment !== '.');
}

const encodeSegment = (segment: string) => segment.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@]/gu, (character) => encodeURIComponent(character));

/** The canonical text of a location: what runs record, ids are derived from, and git is given. */
export function formatRepoLocation(location: RepoLocation): string {
  switch (location.kind) {
    case 'local':
      return location.form === 'path' ? `/${location.segments.join('/')}` : `file:///${location.segments.map(encodeSegment).join('/')}`;
    case 'url':
      return `${location.scheme}://${location.user ? `${location.user}@` : ''}${location.host}${location.port ? `:${location.port}` : ''}/${location.segments.map(encodeSegment).join('/')}`;
    case 'scp':
      return `${location.user ? `${location.user}@` : ''}${location.host}:${location.absolute ? '/' : ''}${location.segments.join('/')}`;
  }
}

/** Where a location lives, apart from its path: equal origins are the precondition of a prefix match. */
function originOf(location: RepoLocation): string {
  switch (location.kind) {
    case 'local':
      return 'local';
    case 'url':
      return `${location.scheme}://${location.user ?? ''}@${location.host}:${location.port ?? defaultPorts[location.scheme]}`;
    case 'scp':
      return `scp:${location.user ?? ''}@${location.host}:${location.absolute ? '/' : '~'}`;
  }
}

/**
 * True when `entry` admits `location`: the same origin (scheme, user, host and port, exactly;
 * a path and a file:// URL are the same local origin) and the entry's path segments are a
 * prefix of the location's, whole segments only (`/srv/repos` admits `/srv/repos/a.git`,
 * not `/srv/repos-evil/a.git`).
 */
function allowEntryAdmits(entry: RepoLocation, location: RepoLocation): boolean {
  if (originOf(entry) !== originOf(location) || entry.segments.length > location.segments.length) return false;
  return entry.segments.every((segment, index) => segment === location.segments[index]);
}

/** Why the allow-list does not admit a location (a phrase after the field name), or undefined when it does. */
export function repoAllowProblem(location: RepoLocation, allow: readonly string[]): string | undefined {
  if (allow.length === 0) return 'is not allowed: this server accepts no repository locations (TARMAC_REPO_ALLOW is empty)';
  const admitted = allow.some((text) => {
    const entry = parseRepoLocation(text);
    return entry.ok && allowEntryAdmits(entry.location, location);
  });
  return admitted ? undefined : `is not allowed on this server (TARMAC_REPO_ALLOW lists the allowed locations): ${formatRepoLocation(location)}`;
}

/** The git protocol (GIT_ALLOW_PROTOCOL's names) a location is reached with. */
export function gitProtocolOf(location: RepoLocation): GitProtocol {
  return location.kind === 'local' ? 'file' : location.kind === 'scp' ? 'ssh' : location.scheme;
}

/** The protocols the allow-list's entries are reached with (never `ext` or `fd`: no entry can name them). */
export function gitProtocolsAllowedBy(allow: readonly string[]): GitProtocol[] {
  const protocols = new Set<GitProtocol>();
  for (const text of allow) {
    const entry = parseRepoLocation(text);
    if (entry.ok) protocols.add(gitProtocolOf(entry.location));
  }
  return gitProtocols.filter((protocol) => protocols.has(protocol));
}

/**
 * `-c` settings for every host-side git command: no HTTP redirect is followed (a redirect could
 * take a fetch to a host the allow-list never named), and git itself refuses a URL with
 * credentials (`transfer.credentialsInUrl`, git ≥ 2.41; older gits ignore the unknown key).
 */
export const gitTransportSettings = ['http.followRedirects=false', 'transfer.credentialsInUrl=die'] as const;

/** `gitTransportSettings` as git argv, to put before the subcommand. */
export const gitTransportArgs: readonly string[] = gitTransportSettings.flatMap((setting) => ['-c', setting]);

/**
 * The protocol rule of `gitTransportEnv` as `-c` settings (every protocol off, then these on),
 * for the git commands the spawn helper runs (activities/git/git.ts puts them on every command's
 * argv, so the rule holds whatever environment reaches git): here they only ever narrow.
 */
export function gitProtocolSettings(protocols: readonly GitProtocol[]): string[] {
  return [
    'protocol.allow=never',
    ...protocols.filter((protocol) => (gitProtocols as readonly string[]).includes(protocol)).map((protocol) => `protocol.${protocol}.allow=always`),
  ];
}

/**
 * Environment additions for every host-side git command: only these protocols (an empty list
 * allows none; `ext` and `fd` are never in it), no terminal prompt, and ssh in batch mode (no
 * password, passphrase or host-key question). `sshCommand` is the operator's own
 * `GIT_SSH_COMMAND`, if any (default `ssh`); batch mode is added to it.
 */
export function gitTransportEnv(
  protocols: readonly GitProtocol[],
  sshCommand?: string,
): { GIT_ALLOW_PROTOCOL: string; GIT_TERMINAL_PROMPT: string; GIT_SSH_COMMAND: string } {
  return {
    GIT_ALLOW_PROTOCOL: protocols.filter((protocol) => (gitProtocols as readonly string[]).includes(protocol)).join(':'),
    GIT_TERMINAL_PROMPT: '0',
    GIT_SSH_COMMAND: `${sshCommand?.trim() || 'ssh'} -o BatchMode=yes`,
  };
}

/**
 * Removes credentials from text that may quote a location (git's error output, log lines,
 * request URLs whose query string carries a percent-encoded location): URL userinfo becomes
 * `[redacted]` (an ssh user name without a password is kept), and so does `user:password@`
 * of the scp form.
 */
export function redactCredentials(text: string): string {
  const keepSshUser = (scheme: string, userinfo: string) => /^ssh(:|%3a)/i.test(scheme) && userPattern.test(userinfo);
  return text
    .replace(/\b([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^\s/?#"'\\<>]+)@/g, (match, scheme: string, userinfo: string) =>
      keepSshUser(scheme, userinfo) ? match : `${scheme}[redacted]@`,
    )
    .replace(/\b([A-Za-z][A-Za-z0-9+.-]*%3A%2F%2F)((?:(?!%2F)[^\s/?#&"'\\<>])+)%40/gi, (match, scheme: string, userinfo: string) =>
      keepSshUser(scheme, userinfo) ? match : `${scheme}[redacted]%40`,
    )
    .replace(/(^|[\s'"(=])([^\s/:@'"()=]+):([^\s/@'"]+)@(?=[A-Za-z0-9.-]+:)/g, '$1[redacted]@');
}
