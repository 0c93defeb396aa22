/**
 * The record of a workspace's recent releases (docs/decisions/013), kept beside the lock: it
 * tells a retried UNLOCK or a late LOCK from one that names a lock that never was. Bounded in
 * count and age: it answers for the retries of the last hour.
 */

/** How many releases a workspace's record keeps (the newest). */
export const RELEASED_KEEP = 64;
/** How long a release is remembered (ms, by the clocks of the releaser and the reader). */
export const RELEASED_MAX_AGE_MS = 60 * 60 * 1000;

/** One remembered release. */
export interface ReleasedLock {
  /** The released lock's ID. */
  readonly id: string;
  /** When it was released: epoch ms by the releasing process's clock. */
  readonly at: number;
  /** The principal of a force-unlock that named no ID (the tool's), else undefined. */
  readonly forcedBy?: string | undefined;
}

/** What a release records about itself (see `LockPlace.release`). */
export interface ReleaseNote {
  readonly atMs: number;
  readonly forcedBy?: string | undefined;
}

/** The stored form: `[{"ID": …, "At": ms, "ForcedBy"?: …}, …]`, oldest first. */
interface Stored {
  readonly ID: string;
  readonly At: number;
  readonly ForcedBy?: string;
}

/** The releases in a stored record; anything unreadable counts as none (it only ever widens a refusal). */
export function parseReleased(text: string | null | undefined): ReleasedLock[] {
  if (text === null || text === undefined || text === "") return [];
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(v)) return [];
  const out: ReleasedLock[] = [];
  for (const e of v as unknown[]) {
    if (typeof e !== "object" || e === null) continue;
    const s = e as Partial<Record<keyof Stored, unknown>>;
    if (typeof s.ID !== "string" || typeof s.At !== "number") continue;
    out.push({ id: s.ID, at: s.At, forcedBy: typeof s.ForcedBy === "string" ? s.ForcedBy : undefined });
  }
  return out;
}

/** The record with one more release: the same ID once, nothing past the age limit, at most {@link RELEASED_KEEP}. */
export function withRelease(list: readonly ReleasedLock[], id: string, note: ReleaseNote): string {
  const kept = list.filter((r) => r.id !== id && Math.abs(note.atMs - r.at) <= RELEASED_MAX_AGE_MS);
  kept.push({ id, at: note.atMs, forcedBy: note.forcedBy });
  const stored: Stored[] = kept
    .slice(-RELEASED_KEEP)
    .map((r) => (r.forcedBy === undefined ? { ID: r.id, At: r.at } : { ID: r.id, At: r.at, ForcedBy: r.forcedBy }));
  return JSON.stringify(stored);
}

/** The release of `id` in the record, if it is younger than the age limit at `nowMs`. */
export function findRelease(list: readonly ReleasedLock[], id: string, nowMs: number): ReleasedLock | undefined {
  return list.find((r) => r.id === id && nowMs - r.at <= RELEASED_MAX_AGE_MS);
}
