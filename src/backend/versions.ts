/** Comparing versions of a workspace's state (docs/design.md §9): the sides a diff compares by default, and the current version a confirmed rollback expects. */
import { openState } from "./crypt.js";
import { ObjstateError } from "../errors.js";
import type { BackendContext } from "./context.js";
import { conflict } from "./meta.js";
import { stateHistory } from "./history.js";
import type { DiffOptions } from "./options.js";
import { readVersionChecked } from "./read.js";
import type { VersionDiff } from "./results.js";

/** The current version's ID, or null when the workspace has none (never written, or deleted). */
export async function currentVersionOf(ctx: BackendContext, workspace: string): Promise<string | null> {
  for await (const v of stateHistory(ctx, workspace, { limit: 1 })) return v.deleteMarker ? null : v.versionId;
  return null;
}

/** The sides of a diff: `to` by default the current version, `from` the version with content just before it; reads only as much history as that needs. */
async function diffSides(ctx: BackendContext, workspace: string, sides: DiffOptions): Promise<{ from: string | null; to: string | null }> {
  const { from, to } = sides;
  if (from !== undefined && to !== undefined) return { from, to };
  let toId: string | null = to ?? null;
  let reachedTo = false;
  let any = false;
  for await (const v of stateHistory(ctx, workspace)) {
    any = true;
    if (!reachedTo) {
      if (to === undefined) toId = v.deleteMarker ? null : v.versionId;
      // `to: null` ("no state") has no place in the history: the newest version stands for it.
      reachedTo = to === undefined || to === null || v.versionId === to;
      if (reachedTo && from !== undefined) break;
      if (!reachedTo || to !== null) continue;
    }
    if (!v.deleteMarker) return { from: from ?? v.versionId, to: toId };
  }
  if (!any)
    throw new ObjstateError("STATE_NOT_FOUND", `workspace ${workspace} has no versions at ${ctx.describe(workspace)}: nothing to compare`, {
      details: { workspace },
    });
  if (!reachedTo)
    throw new ObjstateError("VERSION_NOT_FOUND", `${ctx.describe(workspace)} has no version ${JSON.stringify(to)}: list them with objstate state history`, {
      details: { versionId: to },
    });
  return { from: from ?? null, to: toId };
}

/** What changed between two versions (see {@link diffSides} for the defaults). */
export async function diffVersions(ctx: BackendContext, workspace: string, sides: DiffOptions): Promise<VersionDiff> {
  // Loaded on demand: importing the package does not load the comparison (objstate/state).
  const [ids, { diffStates }] = await Promise.all([diffSides(ctx, workspace, sides), import("../state/diff.js")]);
  const read = async (id: string | null): Promise<Buffer | null> => {
    if (id === null) return null;
    const stored = await readVersionChecked(ctx, workspace, id);
    return ctx.encryption === undefined ? stored : (await openState(ctx.encryption, stored, workspace)).state;
  };
  const [a, b] = await Promise.all([read(ids.from), read(ids.to)]);
  return { from: ids.from, to: ids.to, diff: sides.compare === undefined ? diffStates(a, b) : await sides.compare(a, b) };
}

/** What a rollback to `versionId` would change: the diff from the current version to it. */
export async function rollbackPreview(ctx: BackendContext, workspace: string, versionId: string): Promise<VersionDiff> {
  return diffVersions(ctx, workspace, { from: await currentVersionOf(ctx, workspace), to: versionId });
}

/** `STATE_CONFLICT` when the workspace was written since the diff from `expected` was shown (the caller holds the lock). */
export async function checkCurrent(ctx: BackendContext, workspace: string, expected: string | null): Promise<void> {
  const now = await currentVersionOf(ctx, workspace);
  if (now === expected) return;
  throw conflict(`${ctx.describe(workspace)} was written since the diff was shown: nothing was written; run the rollback again to review the new diff`, {
    details: { expected, current: now },
  });
}
