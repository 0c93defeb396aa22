/**
 * What the lineage guard needs to know of a state: its `lineage`, `serial`, format `version`
 * and whether it is empty. Read from the first bytes when the state is large (the tool
 * writes `version`, `terraform_version`, `serial` and `lineage` first), so guarding a write
 * never needs a second full download or parse of a big state.
 */
import { ObjstateError } from "../errors.js";

/** The guard's view of one state. */
export interface StateHeader {
  readonly lineage: string | undefined;
  readonly serial: number | undefined;
  readonly version: number | undefined;
  /**
   * No resources and no root outputs (what `workspace new` writes): may be overwritten by
   * anything. Undefined when not known (only part of a large state was read).
   */
  readonly empty: boolean | undefined;
}

const WANTED = new Set(["lineage", "serial", "version"]);

/**
 * Scan the top level of a JSON object in `bytes` (possibly only its first part) for the
 * scalar members `lineage`, `serial` and `version`, skipping every nested value without
 * parsing it. Returns what was found before the bytes ran out; never throws on truncation.
 * Returns undefined when the text does not start like a JSON object.
 */
export function scanHeader(bytes: Uint8Array): { lineage?: string; serial?: number; version?: number; complete: boolean } | undefined {
  const n = bytes.length;
  let i = skipWs(bytes, 0);
  if (bytes[i] !== 0x7b) return undefined; // {
  i++;
  const found: { lineage?: string; serial?: number; version?: number; complete: boolean } = { complete: false };
  for (;;) {
    i = skipWs(bytes, i);
    if (i >= n) return found;
    if (bytes[i] === 0x7d) return { ...found, complete: true }; // }
    if (bytes[i] === 0x2c) { // ,
      i++;
      continue;
    }
    if (bytes[i] !== 0x22) return found; // a key must be a string; anything else: give up quietly
    const keyEnd = stringEnd(bytes, i);
    if (keyEnd < 0) return found;
    const key = decodeString(bytes, i, keyEnd);
    i = skipWs(bytes, keyEnd);
    if (bytes[i] !== 0x3a) return found; // :
    i = skipWs(bytes, i + 1);
    if (i >= n) return found;
    const valueEnd = skipValue(bytes, i);
    if (valueEnd < 0) return found;
    if (key !== undefined && WANTED.has(key)) {
      const text = Buffer.from(bytes.buffer, bytes.byteOffset + i, valueEnd - i).toString("utf8");
      let v: unknown;
      try {
        v = JSON.parse(text);
      } catch {
        v = undefined;
      }
      if (key === "lineage" && typeof v === "string") found.lineage = v;
      if (key === "serial" && typeof v === "number") found.serial = v;
      if (key === "version" && typeof v === "number") found.version = v;
    }
    i = valueEnd;
  }
}

/**
 * The header of a whole state (`complete` true) or of its first bytes. A whole state is
 * parsed to tell whether it is empty; a state that is not JSON is `STATE_INVALID`.
 */
export function stateHeader(bytes: Uint8Array, whole: boolean, where: string): StateHeader {
  if (whole) {
    let doc: unknown;
    try {
      doc = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"));
    } catch {
      throw new ObjstateError("STATE_INVALID", `${where} is not valid JSON, so its lineage and serial cannot be checked`);
    }
    if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new ObjstateError("STATE_INVALID", `${where} is not a state: expected a JSON object`);
    const o = doc as Record<string, unknown>;
    return {
      lineage: typeof o["lineage"] === "string" ? o["lineage"] : undefined,
      serial: typeof o["serial"] === "number" ? o["serial"] : undefined,
      version: typeof o["version"] === "number" ? o["version"] : undefined,
      empty: isEmptyState(o),
    };
  }
  const h = scanHeader(bytes);
  return { lineage: h?.lineage, serial: h?.serial, version: h?.version, empty: undefined };
}

/**
 * No resources in any module and no root outputs (the tool's `State.Empty()` as far as a
 * state file shows it). Format 4 keeps both at the top level; 1–3 keep them per module.
 */
export function isEmptyState(o: Record<string, unknown>): boolean {
  const none = (v: unknown): boolean => v === undefined || v === null || (Array.isArray(v) ? v.length === 0 : typeof v === "object" && Object.keys(v).length === 0);
  const modules = o["modules"];
  if (Array.isArray(modules)) {
    for (const m of modules) {
      if (typeof m !== "object" || m === null) continue;
      const mod = m as Record<string, unknown>;
      if (!none(mod["resources"])) return false;
      const path = mod["path"];
      const root = Array.isArray(path) && path.length === 1 && path[0] === "root";
      if (root && !none(mod["outputs"])) return false;
    }
  }
  return none(o["resources"]) && none(o["outputs"]);
}

function skipWs(b: Uint8Array, i: number): number {
  while (i < b.length) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

/** Index just past the closing quote of the string starting at `i`, or -1 when truncated. */
function stringEnd(b: Uint8Array, i: number): number {
  for (let j = i + 1; j < b.length; j++) {
    const c = b[j];
    if (c === 0x5c) j++;
    else if (c === 0x22) return j + 1;
  }
  return -1;
}

function decodeString(b: Uint8Array, start: number, end: number): string | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(b.buffer, b.byteOffset + start, end - start).toString("utf8"));
    return typeof v === "string" ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Index just past the value starting at `i`, or -1 when the bytes end first. */
function skipValue(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === 0x22) return stringEnd(b, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let j = i; j < b.length; j++) {
      const d = b[j];
      if (d === 0x22) {
        j = stringEnd(b, j);
        if (j < 0) return -1;
        j--;
      } else if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  // A scalar: up to the next delimiter.
  for (let j = i; j < b.length; j++) {
    const d = b[j];
    if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) return j;
  }
  return -1;
}
