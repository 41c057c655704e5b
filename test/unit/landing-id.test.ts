import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { landingId, repoName, retryLandingId } from '../../core/node/landing-id';

const heads = [{ branch: 'feature/x', sha: 'a'.repeat(40) }];

describe('landingId', () => {
  it('is the same for the same business key', () => {
    assert.equal(landingId('/srv/repo.git', 'main', heads), landingId('/srv/repo.git', 'main', heads));
  });
  const differing = [
    { name: 'another repo', id: landingId('/srv/other.git', 'main', heads) },
    { name: 'another target', id: landingId('/srv/repo.git', 'release/1', heads) },
    { name: 'another head', id: landingId('/srv/repo.git', 'main', [{ branch: 'feature/x', sha: 'b'.repeat(40) }]) },
    { name: 'another branch order', id: landingId('/srv/repo.git', 'main', [...heads, { branch: 'y', sha: 'c'.repeat(40) }]) },
  ];
  for (const { name, id } of differing) {
    it(`differs for ${name}`, () => assert.notEqual(id, landingId('/srv/repo.git', 'main', heads)));
  }
  it('is safe in URLs, file names and container names', () => {
    const id = landingId('git@example.com:team/My Repo.git', 'release/2.0', heads);
    assert.match(id, /^land\.[A-Za-z0-9._-]+$/);
    assert.match(id, /^land\.My_Repo\.release_2\.0\.[0-9a-f]{12}$/);
  });
});

describe('retryLandingId', () => {
  const first = landingId('/srv/repo.git', 'main', heads);
  const table = [
    { name: 'the first run → attempt 2', retried: first, expected: { id: `${first}.retry-2`, attempt: 2, first } },
    { name: 'a retry → the next attempt, from the first id', retried: `${first}.retry-2`, expected: { id: `${first}.retry-3`, attempt: 3, first } },
    { name: 'attempt 9 → 10', retried: `${first}.retry-9`, expected: { id: `${first}.retry-10`, attempt: 10, first } },
    { name: 'a target named like a retry stays inside the id', retried: landingId('/srv/repo.git', 'x.retry-4', heads), expected: undefined },
  ];
  for (const { name, retried, expected } of table) {
    it(name, () => {
      const got = retryLandingId(retried);
      if (expected) assert.deepEqual(got, expected);
      else assert.deepEqual(got, { id: `${retried}.retry-2`, attempt: 2, first: retried });
      assert.match(got.id, /^[A-Za-z0-9._-]{1,200}$/, 'still a valid run id (GET /v1/runs/:id)');
    });
  }
});

describe('repoName', () => {
  const table = [
    { input: 'file:///tmp/demo/origin.git', expected: 'origin' },
    { input: 'git@github.com:acme/widgets.git', expected: 'widgets' },
    { input: '/srv/repos/app/', expected: 'app' },
  ];
  for (const { input, expected } of table) it(input, () => assert.equal(repoName(input), expected));
});
