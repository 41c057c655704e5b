import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname, posix } from 'node:path';
import { Context } from '@temporalio/activity';
import type Docker from 'dockerode';
import { canonicalJson, type EnvironmentDeclaration } from '../../core/environment';
import { defaultRunnerImage } from '../../core/gate-file';
import { failure, FailureCode } from '../../core/failures';
import { automationGit, gitArgs } from '../git/git';
import { heartbeatWith } from '../containers/heartbeat-details';

/**
 * The base image of an environment: the one it names, or one built from the repository's
 * Dockerfile in the tree under test. A Dockerfile build has no network (`networkmode: none`; its
 * RUN steps install nothing from outside — that is what the setup and its egress gateway are for)
 * and never pulls. Its image is tagged by what it was built from (the context's tree, the
 * Dockerfile's path, the build args), so the same context is built once per host; its ID is part of
 * the environment's key.
 */
type BaseImage = { ok: true; image: string; imageId: string } | { ok: false; why: string; log: string };

/** Tag of the image a Dockerfile builds: from its context's tree, its path and args. */
function dockerfileTag(contextTree: string, dockerfile: string, args: Record<string, string>): string {
  return `tarmac/env-base:${createHash('sha256').update(canonicalJson({ contextTree, dockerfile, args })).digest('hex').slice(0, 24)}`;
}

export async function imageIdOf(docker: Docker, image: string): Promise<string | undefined> {
  return await docker
    .getImage(image)
    .inspect()
    .then((info) => info.Id)
    .catch(() => undefined);
}

/** The base image of a declaration for the tree of `commitSha` in `worktree`, built when it is a Dockerfile's and missing. */
export async function baseImageFor(
  docker: Docker,
  worktree: string,
  commitSha: string,
  declaration: EnvironmentDeclaration,
  fallbackImage: string | undefined,
  logFile: string,
): Promise<BaseImage> {
  if (!declaration.dockerfile) {
    const image = declaration.image ?? fallbackImage ?? defaultRunnerImage;
    const imageId = await imageIdOf(docker, image);
    if (!imageId)
      throw failure(FailureCode.imageMissing, `image ${image} of the environment is not on this Docker host; build it with scripts/setup.sh or docker build`);
    return { ok: true, image, imageId };
  }
  const { path, context, args } = declaration.dockerfile;
  const inContext = context === '.' ? path : posix.relative(context, path);
  if (inContext.startsWith('../')) return { ok: false, why: `the Dockerfile ${path} is outside its build context ${context}`, log: '' };
  const git = automationGit(worktree);
  const contextTree = (
    await git.raw(['rev-parse', '--verify', '--quiet', context === '.' ? `${commitSha}^{tree}` : `${commitSha}:${context}`]).catch(() => '')
  ).trim();
  if (!contextTree) return { ok: false, why: `the build context ${context} is not a directory of the tree under test`, log: '' };
  const tag = dockerfileTag(contextTree, inContext, args);
  const existing = await imageIdOf(docker, tag);
  if (existing) return { ok: true, image: tag, imageId: existing };
  await mkdir(dirname(logFile), { recursive: true });
  const archive = spawn('git', gitArgs(worktree, 'archive', '--format=tar', contextTree), { stdio: ['ignore', 'pipe', 'ignore'] });
  const context_ = Context.current();
  const lines: string[] = [];
  try {
    const stream = await docker.buildImage(archive.stdout, {
      t: tag,
      dockerfile: inContext,
      buildargs: args,
      networkmode: 'none',
      rm: true,
      forcerm: true,
      pull: false,
      labels: { 'tarmac.environment-base': contextTree },
    });
    const beat = setInterval(() => heartbeatWith(context_, { building: tag }), 2_000);
    try {
      await new Promise<void>((resolve, reject) => {
        docker.modem.followProgress(
          stream,
          (error: Error | null) => (error ? reject(error) : resolve()),
          (event: { stream?: string; error?: string }) => {
            const line = event.error ?? event.stream;
            if (line) lines.push(line.trimEnd());
          },
        );
      });
    } finally {
      clearInterval(beat);
    }
  } catch (error) {
    lines.push(String((error as Error).message ?? error));
  }
  await appendFile(logFile, `${lines.join('\n')}\n`);
  const imageId = await imageIdOf(docker, tag);
  if (!imageId) return { ok: false, why: `the Dockerfile ${path} did not build (docker build without network)`, log: lines.slice(-20).join('\n') };
  return { ok: true, image: tag, imageId };
}
