/**
 * What the lineage guard needs to know of a state: its `lineage`, `serial`, format `version`
 * and whether it is empty. Read from the first bytes when the state is large (the tool
 * writes `version`, `terraform_version`, `serial` and `lineage` first), so guarding a write
 * never needs a second full download or parse of a big state.
 */
import { ObjstateError } from "../errors.js";
import { decode, encodeNames, isWs, keyName, SCALAR, skipWs, strictString } from "../json/bytes.js";
import { checkContainer, MAX_NESTING } from "../json/validate.js";

const QUOTE = 0x22;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const COLON = 0x3a;

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

const WANTED = encodeNames(["lineage", "serial", "version"]);

/** What {@link scanHeader} found in the first bytes of a state. */
export interface ScannedHeader {
  lineage?: string;
  serial?: number;
  version?: number;
  /** Where the top-level `serial` number is in the bytes: [start, end). */
  serialAt?: [number, number];
  /** The whole top-level object was scanned. */
  complete: boolean;
}

/**
 * Scan the top level of a JSON object in `bytes` (possibly only its first part) for the
 * scalar members `lineage`, `serial` and `version`, skipping every nested value without
 * parsing it. Returns what was found before the bytes ran out (or stopped making sense);
 * never throws on truncation. Returns undefined when the text does not start like a JSON
 * object.
 */
export function scanHeader(bytes: Uint8Array): ScannedHeader | undefined {
  const n = bytes.length;
  let i = skipWs(bytes, 0);
  if (bytes[i] !== OPEN_BRACE) return undefined;
  i++;
  const found: ScannedHeader = { complete: false };
  for (;;) {
    i = skipWs(bytes, i);
    if (i >= n) return found;
    if (bytes[i] === CLOSE_BRACE) return { ...found, complete: true };
    if (bytes[i] === COMMA) {
      i++;
      continue;
    }
    if (bytes[i] !== QUOTE) return found;
    const keyEnd = strictString(bytes, i + 1);
    if (keyEnd < 0) return found;
    const key = keyName(bytes, i + 1, keyEnd, WANTED);
    i = skipWs(bytes, keyEnd + 1);
    if (bytes[i] !== COLON) return found;
    const start = skipWs(bytes, i + 1);
    const end = valueEnd(bytes, start);
    // A value cut off by the end of the prefix (or not JSON): what was found is the answer.
    if (end < 0) return found;
    if (key !== undefined) {
      const v: unknown = JSON.parse(decode(bytes, start, end));
      if (key === "lineage" && typeof v === "string") found.lineage = v;
      if ((key === "serial" || key === "version") && typeof v === "number") found[key] = v;
      if (key === "serial" && typeof v === "number") found.serialAt = [start, end];
    }
    i = end;
  }
}

/** Index just past the value starting at `i`, or -1 when it is cut off or not JSON. */
function valueEnd(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    const end = checkContainer(b, i, MAX_NESTING - 1);
    return end < 0 ? -1 : end;
  }
  if (c === QUOTE) {
    const close = strictString(b, i + 1);
    return close < 0 ? -1 : close + 1;
  }
  let j = i;
  while (j < b.length && b[j] !== COMMA && b[j] !== CLOSE_BRACE && !isWs(b[j])) j++;
  // A scalar that runs to the end of the bytes may be cut off (`12` of `123`).
  return j < b.length && SCALAR.test(decode(b, i, j)) ? j : -1;
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
    if (typeof doc !== "object" || doc === null || Array.isArray(doc))
      throw new ObjstateError("STATE_INVALID", `${where} is not a state: expected a JSON object`);
    const o = doc as Record<string, unknown>;
    return {
      lineage: typeof o["lineage"] === "string" ? o["lineage"] : undefined,
      serial: typeof o["serial"] === "number" ? o["serial"] : undefined,
      version: typeof o["version"] === "number" ? o["version"] : undefined,
      // An envelope's resources are inside its data: never taken for an empty state.
      empty: "encryption_version" in o ? false : isEmptyState(o),
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
  const none = (v: unknown): boolean =>
    v === undefined || v === null || (Array.isArray(v) ? v.length === 0 : typeof v === "object" && Object.keys(v).length === 0);
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
