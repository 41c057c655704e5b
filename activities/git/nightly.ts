import { landingId } from '../../core/node/landing-id';
import { failure, FailureCode } from '../../core/failures';
import type { BranchHead } from '../../core/types';
import { originGit } from './git';

interface PinnedLanding {
  /** The landing's workflow id, from the same business key the API uses (`landingId`). */
  landingId: string;
  targetSha: string;
  heads: BranchHead[];
}

/** Activities of the nightly run that do not exist elsewhere. */
export function createNightlyActivities() {
  return {
    /**
     * Pins a branch for a landing, as `POST /v1/landings` does: reads the target and
     * branch heads from the origin (`git ls-remote`) and derives the landing id from
     * them, so a nightly's landing is indistinguishable from one requested by hand.
     */
    pinLanding: async ({ repo, target, branch }: { repo: string; target: string; branch: string }): Promise<PinnedLanding> => {
      const out = await originGit(process.cwd(), repo).listRemote(['--heads', '--', repo, `refs/heads/${target}`, `refs/heads/${branch}`]);
      const refs = new Map(
        out
          .split('\n')
          .map((line) => line.split('\t'))
          .filter((parts): parts is [string, string] => parts.length === 2)
          .map(([sha, ref]) => [ref.trim(), sha.trim()]),
      );
      const targetSha = refs.get(`refs/heads/${target}`);
      const sha = refs.get(`refs/heads/${branch}`);
      if (!targetSha || !sha) throw failure(FailureCode.refNotFound, `branch ${targetSha ? branch : target} does not exist in ${repo}`);
      const heads = [{ branch, sha }];
      return { landingId: landingId(repo, target, heads), targetSha, heads };
    },
  };
}
