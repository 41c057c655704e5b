import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { repoArgument } from '../../cli/commands/land';
import {
  gitProtocolsAllowedBy,
  gitProtocolSettings,
  gitTransportArgs,
  gitTransportEnv,
  parseRepoLocation,
  redactCredentials,
  repoAllowProblem,
} from '../../core/repo-location';

/** `canonical` for accepted locations; `refused` (a pattern of the problem) for refused ones. */
const parseCases: { name: string; input: string; canonical?: string; refused?: RegExp }[] = [
  { name: 'absolute path', input: '/srv/repos/a.git', canonical: '/srv/repos/a.git' },
  { name: 'path: trailing slash, doubled slash and "." dropped', input: '/srv//repos/./a.git/', canonical: '/srv/repos/a.git' },
  { name: 'path with a space', input: '/srv/my repos/a.git', canonical: '/srv/my repos/a.git' },
  { name: 'file URL', input: 'file:///srv/repos/a.git', canonical: 'file:///srv/repos/a.git' },
  { name: 'file URL on localhost', input: 'file://LOCALHOST/srv/repos/a.git', canonical: 'file:///srv/repos/a.git' },
  { name: 'file URL: encoded space decoded, then encoded once', input: 'file:///srv/my%20repos/a.git', canonical: 'file:///srv/my%20repos/a.git' },
  {
    name: 'https URL: scheme and host lower-cased, default port dropped',
    input: 'HTTPS://Git.Example.com:443/Acme/a.git',
    canonical: 'https://git.example.com/Acme/a.git',
  },
  { name: 'https URL with another port', input: 'https://git.example.com:8443/acme/a.git', canonical: 'https://git.example.com:8443/acme/a.git' },
  { name: 'ssh URL with a user name (no password)', input: 'ssh://git@github.com/acme/a.git', canonical: 'ssh://git@github.com/acme/a.git' },
  { name: 'git URL', input: 'git://git.example.com/a.git', canonical: 'git://git.example.com/a.git' },
  { name: 'IPv6 host', input: 'http://[::1]:8080/a.git', canonical: 'http://[::1]:8080/a.git' },
  { name: 'scp form', input: 'git@github.com:acme/a.git', canonical: 'git@github.com:acme/a.git' },
  { name: 'scp form, absolute path', input: 'example.com:/srv/a.git', canonical: 'example.com:/srv/a.git' },
  { name: 'empty', input: '', refused: /empty/ },
  { name: 'relative path', input: 'repos/a.git', refused: /absolute path/ },
  { name: 'dot-relative path', input: './a.git', refused: /absolute path/ },
  { name: 'path with ..', input: '/srv/repos/../etc', refused: /"\.\."/ },
  { name: 'file URL with ..', input: 'file:///srv/repos/../etc', refused: /"\.\."/ },
  { name: 'file URL with %2e%2e', input: 'file:///srv/repos/%2e%2e/etc', refused: /percent-encoded/ },
  { name: 'file URL with %2E%2E', input: 'file:///srv/repos/%2E%2E/etc', refused: /percent-encoded/ },
  { name: 'file URL with .%2e', input: 'file:///srv/repos/.%2e/etc', refused: /percent-encoded/ },
  { name: 'encoded slash', input: 'https://h.example/acme%2f..%2fother/a.git', refused: /percent-encoded/ },
  { name: 'path with %2e%2e (literal for git, refused all the same)', input: '/srv/repos/%2e%2e/etc', refused: /percent-encoded/ },
  { name: 'https URL with ..', input: 'https://h.example/acme/../other/a.git', refused: /"\.\."/ },
  { name: 'invalid percent-encoding', input: 'https://h.example/acme/%zz.git', refused: /percent-encoding/ },
  { name: 'encoded control character', input: 'https://h.example/acme/a%00.git', refused: /control/ },
  { name: 'backslash', input: '/srv/repos\\..\\etc', refused: /backslash/ },
  { name: 'ext:: remote helper', input: 'ext::sh -c touch% /tmp/pwned', refused: /remote-helper/ },
  { name: 'fd:: remote helper', input: 'fd::3', refused: /remote-helper/ },
  { name: 'any transport::address', input: 'https::https://h.example/a.git', refused: /remote-helper/ },
  { name: 'unknown scheme', input: 'ftp://h.example/a.git', refused: /scheme "ftp:"/ },
  { name: 'git+ssh alias', input: 'git+ssh://h.example/a.git', refused: /scheme/ },
  { name: 'leading dash', input: '-uupload-pack=touch /tmp/x', refused: /"-"/ },
  { name: 'control character', input: '/srv/a\u0000b', refused: /control/ },
  { name: 'https with user and password', input: 'https://user:s3cret@h.example/a.git', refused: /credentials.*credential helper/ },
  { name: 'https with a token as user', input: 'https://ghp_s3cret@h.example/a.git', refused: /credentials/ },
  { name: 'http with empty password', input: 'http://user:@h.example/a.git', refused: /credentials/ },
  { name: 'ssh with a password', input: 'ssh://git:s3cret@h.example/a.git', refused: /credentials/ },
  { name: 'file URL with userinfo', input: 'file://user:s3cret@/srv/a.git', refused: /credentials/ },
  { name: 'scp form with a password', input: 'git:s3cret@h.example:acme/a.git', refused: /credentials/ },
  { name: 'password with an @ in it', input: 'https://u:p@ss@h.example/a.git', refused: /credentials/ },
  { name: 'file URL with a host', input: 'file://otherhost/srv/a.git', refused: /without a host/ },
  { name: 'query', input: 'https://h.example/a.git?x=1', refused: /query/ },
  { name: 'fragment', input: 'https://h.example/a.git#x', refused: /fragment/ },
  { name: 'bad host', input: 'https://-h.example/a.git', refused: /host/ },
  { name: 'host only', input: 'https://h.example/', refused: /repository path/ },
  { name: 'port out of range', input: 'https://h.example:70000/a.git', refused: /port/ },
  { name: 'scp form with ..', input: 'h.example:../a.git', refused: /"\.\."/ },
];

describe('parseRepoLocation', () => {
  for (const { name, input, canonical, refused } of parseCases) {
    it(name, () => {
      const parsed = parseRepoLocation(input);
      if (canonical !== undefined) {
        assert.ok(parsed.ok, `"${input}" should be accepted: ${parsed.ok ? '' : parsed.problem}`);
        assert.equal(parsed.canonical, canonical);
        // Canonical is a fixed point: parsing it again gives itself.
        const again = parseRepoLocation(canonical);
        assert.ok(again.ok && again.canonical === canonical, `"${canonical}" is canonical`);
      } else {
        assert.ok(!parsed.ok, `"${input}" should be refused`);
        assert.match(parsed.problem, refused!);
        assert.ok(!parsed.problem.includes('s3cret'), 'a refusal never echoes a secret');
      }
    });
  }
});

const allow = ['file:///srv/repos', '/data/git/', 'https://git.example.com/acme', 'ssh://git@github.com/acme', 'git@github.com:team'];
const allowCases: { name: string; input: string; allowed: boolean }[] = [
  { name: 'inside a file:// entry', input: 'file:///srv/repos/a.git', allowed: true },
  { name: 'a plain path inside a file:// entry', input: '/srv/repos/a.git', allowed: true },
  { name: 'a file:// URL inside a plain-path entry', input: 'file:///data/git/x/a.git', allowed: true },
  { name: 'the entry itself', input: '/srv/repos', allowed: true },
  { name: 'deep inside', input: '/srv/repos/team/sub/a.git', allowed: true },
  { name: 'sibling sharing the prefix text', input: 'file:///srv/repos-evil/a.git', allowed: false },
  { name: 'sibling as plain path', input: '/srv/repos-evil/a.git', allowed: false },
  { name: 'parent', input: '/srv', allowed: false },
  { name: 'elsewhere', input: '/etc/a.git', allowed: false },
  { name: 'https inside', input: 'https://git.example.com/acme/a.git', allowed: true },
  { name: 'https with the default port written out', input: 'https://git.example.com:443/acme/a.git', allowed: true },
  { name: 'https, host in capitals', input: 'https://GIT.example.com/acme/a.git', allowed: true },
  { name: 'https sibling organisation', input: 'https://git.example.com/acme-evil/a.git', allowed: false },
  { name: 'https other port', input: 'https://git.example.com:8443/acme/a.git', allowed: false },
  { name: 'http instead of https', input: 'http://git.example.com/acme/a.git', allowed: false },
  { name: 'other host with the entry as a subdomain', input: 'https://git.example.com.evil.example/acme/a.git', allowed: false },
  { name: 'path case differs', input: 'https://git.example.com/ACME/a.git', allowed: false },
  { name: 'ssh inside, same user', input: 'ssh://git@github.com/acme/a.git', allowed: true },
  { name: 'ssh, another user', input: 'ssh://root@github.com/acme/a.git', allowed: false },
  { name: 'scp inside', input: 'git@github.com:team/a.git', allowed: true },
  { name: 'scp of an ssh:// entry is another form', input: 'git@github.com:acme/a.git', allowed: false },
];

describe('repoAllowProblem', () => {
  for (const { name, input, allowed } of allowCases) {
    it(name, () => {
      const parsed = parseRepoLocation(input);
      assert.ok(parsed.ok, input);
      const problem = repoAllowProblem(parsed.location, allow);
      if (allowed) assert.equal(problem, undefined);
      else assert.match(problem ?? '', /not allowed.*TARMAC_REPO_ALLOW/);
    });
  }
  it('an empty allow-list admits nothing', () => {
    const parsed = parseRepoLocation('/srv/repos/a.git');
    assert.ok(parsed.ok);
    assert.match(repoAllowProblem(parsed.location, []) ?? '', /TARMAC_REPO_ALLOW is empty/);
  });
  it('the root admits every local location, and nothing remote', () => {
    for (const [input, allowed] of [
      ['/srv/a.git', true],
      ['file:///x/a.git', true],
      ['https://h.example/a.git', false],
    ] as const) {
      const parsed = parseRepoLocation(input);
      assert.ok(parsed.ok);
      assert.equal(repoAllowProblem(parsed.location, ['file:///']) === undefined, allowed, input);
    }
  });
});

describe('git transport settings', () => {
  const cases: { name: string; allow: string[]; protocols: string }[] = [
    { name: 'local entries only: file', allow: ['file:///srv/repos', '/data'], protocols: 'file' },
    { name: 'remote entries only: no file', allow: ['https://h.example/acme', 'git@github.com:team'], protocols: 'https:ssh' },
    {
      name: 'all kinds, in a fixed order',
      allow: ['git://h.example/a', 'http://h.example/a', '/srv', 'ssh://h.example/a', 'https://h.example/a'],
      protocols: 'file:https:http:ssh:git',
    },
    { name: 'nothing allowed: no protocol', allow: [], protocols: '' },
  ];
  for (const { name, allow: entries, protocols } of cases) {
    it(name, () => {
      const env = gitTransportEnv(gitProtocolsAllowedBy(entries));
      assert.equal(env.GIT_ALLOW_PROTOCOL, protocols);
      assert.ok(!env.GIT_ALLOW_PROTOCOL.split(':').includes('ext'));
      assert.equal(env.GIT_TERMINAL_PROMPT, '0');
      assert.match(env.GIT_SSH_COMMAND, /^ssh -o BatchMode=yes$/);
    });
  }
  it("batch mode is added to the operator's own ssh command", () => {
    assert.equal(gitTransportEnv(['ssh'], 'ssh -i /keys/deploy').GIT_SSH_COMMAND, 'ssh -i /keys/deploy -o BatchMode=yes');
  });
  it('the same rule as -c settings: every protocol off, then the allowed ones on (never ext)', () => {
    assert.deepEqual(gitProtocolSettings(gitProtocolsAllowedBy(['https://h.example/acme', '/srv'])), [
      'protocol.allow=never',
      'protocol.file.allow=always',
      'protocol.https.allow=always',
    ]);
    assert.deepEqual(gitProtocolSettings([]), ['protocol.allow=never']);
  });
  it('redirects are never followed', () => {
    assert.deepEqual(gitTransportArgs.slice(0, 2), ['-c', 'http.followRedirects=false']);
  });
});

const redactCases: { name: string; input: string; expected: string }[] = [
  {
    name: 'git error quoting a URL with user and password',
    input: "fatal: unable to access 'https://user:s3cret@h.example/a.git/': 403",
    expected: "fatal: unable to access 'https://[redacted]@h.example/a.git/': 403",
  },
  { name: 'token as user name', input: 'https://ghp_s3cret@h.example/a.git', expected: 'https://[redacted]@h.example/a.git' },
  { name: 'password containing @', input: 'see https://u:p@ss@h.example/a.git', expected: 'see https://[redacted]@h.example/a.git' },
  {
    name: 'percent-encoded in a logged query string',
    input: '"url":"/v1/landings?repo=https%3A%2F%2Fuser%3As3cret%40h.example%2Fa.git"',
    expected: '"url":"/v1/landings?repo=https%3A%2F%2F[redacted]%40h.example%2Fa.git"',
  },
  {
    name: 'scp form with a password',
    input: "fatal: 'git:s3cret@h.example:acme/a.git' unreadable",
    expected: "fatal: '[redacted]@h.example:acme/a.git' unreadable",
  },
  { name: 'ssh user name without password is kept', input: 'ssh://git@github.com/acme/a.git', expected: 'ssh://git@github.com/acme/a.git' },
  { name: 'scp user name is kept', input: 'git@github.com:acme/a.git', expected: 'git@github.com:acme/a.git' },
  {
    name: 'nothing to redact',
    input: "fatal: '/srv/a.git' does not appear to be a git repository",
    expected: "fatal: '/srv/a.git' does not appear to be a git repository",
  },
];

describe('redactCredentials', () => {
  for (const { name, input, expected } of redactCases) {
    it(name, () => assert.equal(redactCredentials(input), expected));
  }
});

describe('CLI repo argument', () => {
  it("makes a relative path absolute against the working directory (.. resolved there, on the user's machine)", () => {
    assert.equal(repoArgument('../b/repo.git', '/home/me/a'), '/home/me/b/repo.git');
  });
  it('canonicalises URLs before sending them', () => {
    assert.equal(repoArgument('HTTPS://H.example:443/acme/a.git', '/'), 'https://h.example/acme/a.git');
  });
  it('refuses credentials before anything is sent, naming repo and never echoing the secret', () => {
    assert.throws(
      () => repoArgument('https://user:s3cret@h.example/a.git', '/'),
      (error: Error) => /^repo must not carry credentials/.test(error.message) && !error.message.includes('s3cret'),
    );
  });
  it('refuses a remote helper', () => {
    assert.throws(() => repoArgument('ext::sh -c id', '/'), { message: /^repo uses git's remote-helper syntax/ });
  });
});
