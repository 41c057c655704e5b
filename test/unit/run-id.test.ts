import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runId } from '../../core/node/run-id';

const key = ['a'.repeat(40), 'b'.repeat(40), 'default'];

describe('runId', () => {
  it('is the same for the same business key, and differs for another', () => {
    assert.equal(runId('review', '/srv/repo.git', key), runId('review', '/srv/repo.git', key));
    assert.notEqual(runId('review', '/srv/repo.git', key), runId('review', '/srv/repo.git', [...key, 2]));
    assert.notEqual(runId('review', '/srv/repo.git', key), runId('fix', '/srv/repo.git', key));
  });

  // Regression: the repo name went into the id uncut, so a long repository name gave
  // ids that GET /v1/runs/:id rejected (over 200 characters) for a run the API had started.
  const table = [
    { name: 'a short name', input: '/srv/repos/app.git', expected: /^review\.app\.[0-9a-f]{12}$/ },
    { name: 'a 250-character name', input: `/srv/${'r'.repeat(250)}.git`, expected: /^review\.r{40}\.[0-9a-f]{12}$/ },
    { name: 'spaces and a leading dot', input: 'file:///srv/.My Repo.git', expected: /^review\.My_Repo\.[0-9a-f]{12}$/ },
    { name: 'nothing usable', input: 'git@example.com:/', expected: /^review\.[A-Za-z0-9_]+\.[0-9a-f]{12}$/ },
  ];
  for (const { name, input, expected } of table) {
    it(`is a valid run id path parameter for ${name}`, () => {
      const id = runId('review', input, key);
      assert.match(id, expected);
      assert.ok(id.length <= 100, `${id.length} characters`);
    });
  }
});
