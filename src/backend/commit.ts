/**
 * The commit point of a state write (docs/design.md §5, decision 012): what a stored object is
 * worth against the lock table's digest item. Pure functions; the backend makes the
 * requests.
 *
 * A write stores its object first, recording the generation it intends to commit (the
 * digest item's, plus one) and the digest it replaces; then it commits with one conditional
 * update of the digest item. Only a committed write happened. So a stored object that is not
 * the committed one is either a write whose commit is still possible (its writer died or
 * stalls between the two steps: "torn", the newest state anyone meant) or one that another
 * commit overtook ("superseded": a late write nobody reads).
 */
import type { DigestItem } from "../lock/types.js";
import type { ObjectMeta } from "../store/types.js";
import { META, normalizeDigest, provenComplete } from "./fencing.js";

/** {@link META.parent} of a write that replaced no digest. */
export const NO_PARENT = "none";

/** What a stored write meant to commit, as its object's metadata records it. */
export interface Intent {
  readonly generation: number;
  /** The digest it replaces (normalized), or {@link NO_PARENT}. */
  readonly parent: string;
}

/**
 * How a stored object stands against the committed digest:
 * - `committed`: its bytes are the committed digest's;
 * - `torn`: a complete objstate write whose commit would still succeed (nothing was
 *   committed since it started): finishing it is what its writer was doing;
 * - `superseded`: a complete objstate write overtaken by another commit: it never happened;
 * - `foreign`: none of these can be told (written by another tool or an older objstate,
 *   or its bytes do not match its own record).
 */
export type Verdict = "committed" | "torn" | "superseded" | "foreign";

/** The generation of an item; 0 when there is none. */
export function generationOf(item: DigestItem | null): number {
  return item?.generation ?? 0;
}

/** The metadata a write records of the commit it intends, given the item it saw. */
export function intentMetadata(seen: DigestItem | null): Record<string, string> {
  return { [META.generation]: String(generationOf(seen) + 1), [META.parent]: normalizeDigest(seen?.digest) ?? NO_PARENT };
}

/** The intent an object records, or undefined (not written by this objstate, or unreadable). */
export function intentOf(meta: ObjectMeta): Intent | undefined {
  const m = meta.metadata;
  const g = Number(m?.[META.generation]);
  const parent = m?.[META.parent]?.toLowerCase();
  if (!Number.isSafeInteger(g) || g < 1 || parent === undefined || (parent !== NO_PARENT && !/^[0-9a-f]{32}$/.test(parent))) return undefined;
  return { generation: g, parent };
}

/**
 * Judge a stored object (`actual`: the MD5 of its bytes, computed or proven) against the
 * digest item `item`.
 */
export function judge(meta: ObjectMeta, actual: string, item: DigestItem | null): Verdict {
  const committed = normalizeDigest(item?.digest);
  if (actual === committed) return "committed";
  const intent = intentOf(meta);
  if (intent === undefined || !provenComplete(meta, actual)) return "foreign";
  // Exactly the commit its writer would make now: the generation it saw and the digest it saw.
  if (intent.generation === generationOf(item) + 1 && intent.parent === (committed ?? NO_PARENT)) return "torn";
  return "superseded";
}
