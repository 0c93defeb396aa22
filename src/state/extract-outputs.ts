/**
 * Top-level members of a JSON document (a state's `outputs`, `version`) without parsing the
 * rest, refused exactly when `JSON.parse` refuses it. Below {@link DEFAULT_SCAN_THRESHOLD} it
 * is parsed whole first: `JSON.parse` is as fast there as the scan run cold.
 */
import { Buffer } from "node:buffer";
import { MAX_NESTING, scanJson } from "../json/scan.js";

export { MAX_NESTING } from "../json/scan.js";

export const DEFAULT_SCAN_THRESHOLD = 1536 * 1024;

type TopLevelKind = "object" | "array" | "string" | "number" | "boolean" | "null";

/** The wanted members' byte spans (last occurrence); `parse` when the whole document was parsed too. */
export interface Located {
  readonly kind: TopLevelKind;
  readonly spans: ReadonlyMap<string, readonly [number, number]>;
  readonly method: "scan" | "parse";
}

export type Extracted = Omit<Located, "spans"> & { readonly members: ReadonlyMap<string, unknown> };

interface ExtractOptions {
  /** Documents of at least this many bytes are only scanned. */
  readonly scanThreshold?: number | undefined;
}

export class NestingError extends Error {
  constructor() {
    super(`it is nested more than ${MAX_NESTING} levels deep (the tool's limit)`);
    this.name = "NestingError";
  }
}

const decode = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("utf8");

function kindOf(doc: unknown): TopLevelKind {
  return doc === null ? "null" : Array.isArray(doc) ? "array" : (typeof doc as "object" | "string" | "number" | "boolean");
}

/** @throws SyntaxError (from `JSON.parse`) when `bytes` is not JSON; {@link NestingError} when nested too deep. */
export function locateTopLevel(bytes: Uint8Array, names: readonly string[], options: ExtractOptions = {}): Located {
  const parseFirst = bytes.length < (options.scanThreshold ?? DEFAULT_SCAN_THRESHOLD);
  if (parseFirst) {
    const kind = kindOf(JSON.parse(decode(bytes)));
    if (kind !== "object") return { kind, spans: new Map(), method: "parse" };
  }
  const s = scanJson(bytes, names);
  const f = s.end();
  if (f === undefined) return { kind: "object", spans: s.spans, method: parseFirst ? "parse" : "scan" };
  if (f.kind === "syntax" && f.reason === "too-deep" && s.top === "object") throw new NestingError();
  // Not JSON, or not an object: JSON.parse says which (and throws the SyntaxError reported).
  const kind = kindOf(JSON.parse(decode(bytes)));
  if (kind === "object") throw new SyntaxError("the document could not be scanned");
  return { kind, spans: new Map(), method: "parse" };
}

/** The members `names` as `JSON.parse(text)` gives them; throws as {@link locateTopLevel}. */
export function extractTopLevel(bytes: Uint8Array, names: readonly string[], options: ExtractOptions = {}): Extracted {
  const { kind, spans, method } = locateTopLevel(bytes, names, options);
  const members = new Map<string, unknown>();
  for (const [name, [start, end]] of spans) members.set(name, JSON.parse(decode(bytes.subarray(start, end))));
  return { kind, members, method };
}

/** `JSON.parse(text).outputs` of a top-level object. */
export function extractOutputs(bytes: Uint8Array, options: ExtractOptions = {}): unknown {
  return extractTopLevel(bytes, ["outputs"], options).members.get("outputs");
}

/** The spans, or null when the document is not an object that scans cleanly. */
export function scanTopLevel(b: Uint8Array, names: readonly string[]): Map<string, readonly [number, number]> | null {
  const s = scanJson(b, names);
  return s.end() === undefined ? (s.spans as Map<string, readonly [number, number]>) : null;
}
