import { createFixtureRepo, gateFile } from '../infra/fixture-repo';

/**
 * The bench's two-branch landing: a trivial gate (`make test` → `true`) and two branches that
 * each add one file, so the rebase is clean and the only work is the landing's own. Its own
 * bare origin per index, so concurrent landings never share a target queue.
 */
export function twoBranchFixture(index: number) {
  const repo = createFixtureRepo({
    base: { Makefile: 'test:\n\ttrue\n', '.config/tarmac/land-gate.json': gateFile([{ id: 'test', run: ['make', 'test'] }]) },
    branches: [
      { name: `feature/a-${index}`, commits: [{ message: 'a', files: { 'a.txt': `${index}\n` } }] },
      { name: `feature/b-${index}`, commits: [{ message: 'b', files: { 'b.txt': `${index}\n` } }] },
    ],
  });
  return { ...repo, branches: [`feature/a-${index}`, `feature/b-${index}`] };
}
