import { devcontainerPath } from '../../core/environment';
import { environmentOf } from '../../core/environment-source';
import { gateFilePath, parseGateFile, type GateFileParse } from '../../core/gate-file';
import type { DeclarationFileFacts, GateFileFacts } from '../../policies/gate-file-change';
import { automationGit, catFileBatch, changedPaths, objectAt, type CatFileObject } from './git';

/** The Dockerfile a tree's declaration names (its gate file's `environment`, else its devcontainer), if any. */
function dockerfileNamedBy(gateObject: CatFileObject | null, devcontainerObject: CatFileObject | null): string | undefined {
  // A path that is not a file there (a directory, a submodule) declares nothing, as at the landing's start.
  const gate: GateFileParse =
    gateObject?.type === 'blob' ? parseGateFile(gateObject.content.toString('utf8')) : { ok: false, field: '(file)', message: 'is missing' };
  const devcontainer = devcontainerObject?.type === 'blob' ? devcontainerObject.content.toString('utf8') : undefined;
  const parsed = environmentOf(gate, devcontainer);
  return parsed.ok ? parsed.declaration?.dockerfile?.path : undefined;
}

/**
 * The state on exactly `headSha` against `targetSha` (in the repository at `dir`) of the files
 * that decide the target's gate and environment: the paths the head changes, the objects at the
 * gate file's path, and the declaration files' (`GateFileFacts.declarationFiles`). The gate file
 * and the devcontainer of both commits come from one `git cat-file --batch`; a Dockerfile either
 * declaration names, from a second one.
 */
export async function gateFileFactsIn(dir: string, targetSha: string, headSha: string): Promise<GateFileFacts> {
  const git = automationGit(dir);
  const [paths, [targetGate = null, headGate = null, targetDevcontainer = null, headDevcontainer = null]] = await Promise.all([
    changedPaths(git, targetSha, headSha),
    catFileBatch(dir, [`${targetSha}:${gateFilePath}`, `${headSha}:${gateFilePath}`, `${targetSha}:${devcontainerPath}`, `${headSha}:${devcontainerPath}`]),
  ]);
  // cat-file finds no object for a submodule at the path; ls-tree names its commit, as the gate file's facts always have.
  const [targetBlob, headBlob] = await Promise.all([
    targetGate?.oid ?? objectAt(git, targetSha, gateFilePath).then((object) => object?.oid ?? null),
    headGate?.oid ?? objectAt(git, headSha, gateFilePath).then((object) => object?.oid ?? null),
  ]);
  // The head's declaration is read only when one of its files differs from the target's (else it is the target's).
  const headDeclares = targetGate?.oid !== headGate?.oid || targetDevcontainer?.oid !== headDevcontainer?.oid;
  const named = [dockerfileNamedBy(targetGate, targetDevcontainer), headDeclares ? dockerfileNamedBy(headGate, headDevcontainer) : undefined];
  const dockerfiles = [...new Set(named.filter((path): path is string => path !== undefined && path !== gateFilePath && path !== devcontainerPath))];
  const objects =
    dockerfiles.length === 0
      ? []
      : await catFileBatch(
          dir,
          dockerfiles.flatMap((path) => [`${targetSha}:${path}`, `${headSha}:${path}`]),
        );
  const declarationFiles: DeclarationFileFacts[] = [
    { path: devcontainerPath, targetBlob: targetDevcontainer?.oid ?? null, headBlob: headDevcontainer?.oid ?? null },
    ...dockerfiles.map((path, index) => ({ path, targetBlob: objects[2 * index]?.oid ?? null, headBlob: objects[2 * index + 1]?.oid ?? null })),
  ];
  return { changedPaths: paths, targetBlob, headBlob, declarationFiles };
}
