/** What the lineage guard needs of a state, read from its first bytes when it is large (the tool writes `serial` and `lineage` first). */
import { ObjstateError } from "../errors.js";
import { JsonScanner } from "../json/scan.js";
import { isPlainObject } from "../config/rules.js";

/** How much of a state is scanned for its header (the clear fields an envelope carries, a rollback's or rekey's serial). */
export const HEADER_BYTES = 64 * 1024;

/** The guard's view of one state. */
export interface StateHeader {
  readonly lineage: string | undefined;
  readonly serial: number | undefined;
  readonly version: number | undefined;
  /** No resources and no root outputs (what `workspace new` writes): anything may go over it; undefined when only part was read. */
  readonly empty: boolean | undefined;
}

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

/** The top-level `lineage`, `serial` and `version` found in `bytes` (maybe a first part); undefined when they do not start like a JSON object. */
export function scanHeader(bytes: Uint8Array): ScannedHeader | undefined {
  const s = new JsonScanner(["lineage", "serial", "version"]);
  s.feed(bytes);
  if (s.top !== "object") return undefined;
  const found: ScannedHeader = { complete: s.complete };
  for (const [key, b] of s.values) {
    const v: unknown = JSON.parse(b.toString("utf8"));
    if (key === "lineage" && typeof v === "string") found.lineage = v;
    if ((key === "serial" || key === "version") && typeof v === "number") found[key] = v;
    if (key === "serial" && typeof v === "number") found.serialAt = [...(s.spans.get(key) as [number, number])];
  }
  return found;
}

/** `state` with its top-level serial set to `next(serial)`, and its lineage; `STATE_INVALID` with `message` when its header has no serial. */
export function withSerial(
  state: Buffer,
  next: (serial: number) => number,
  message: string,
  details: Record<string, unknown>,
): { body: Buffer; serial: number; lineage?: string } {
  const h = scanHeader(state.subarray(0, HEADER_BYTES));
  if (h?.serialAt === undefined || h.serial === undefined) throw new ObjstateError("STATE_INVALID", message, { details });
  const serial = next(h.serial);
  const [at, end] = h.serialAt;
  return { body: Buffer.concat([state.subarray(0, at), Buffer.from(String(serial), "utf8"), state.subarray(end)]), serial, lineage: h.lineage };
}

/** The header of a whole state (parsed, to tell whether it is empty; `STATE_INVALID` when not JSON) or of its first bytes. */
export function stateHeader(bytes: Uint8Array, whole: boolean, where: string): StateHeader {
  if (whole) {
    let o: unknown;
    try {
      o = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"));
    } catch {
      throw new ObjstateError("STATE_INVALID", `${where} is not valid JSON, so its lineage and serial cannot be checked`);
    }
    if (!isPlainObject(o)) throw new ObjstateError("STATE_INVALID", `${where} is not a state: expected a JSON object`);
    return {
      lineage: typeof o["lineage"] === "string" ? o["lineage"] : undefined,
      serial: typeof o["serial"] === "number" ? o["serial"] : undefined,
      version: typeof o["version"] === "number" ? o["version"] : undefined,
      // An envelope shows no resources or outputs yet may hold both: never empty, so the guard judges it by its clear lineage and serial.
      empty: o["encryption_version"] === undefined && isEmptyState(o),
    };
  }
  const h = scanHeader(bytes);
  return { lineage: h?.lineage, serial: h?.serial, version: h?.version, empty: undefined };
}

/** No resources in any module and no root outputs (the tool's `State.Empty()`): format 4 at the top level, 1–3 per module. */
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
