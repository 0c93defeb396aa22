/**
 * Top-level members of a JSON document (a state's `outputs`, `version`, `modules`) without
 * parsing the rest: the scan (json/scan.ts) checks the whole grammar, so a document is
 * refused exactly when `JSON.parse` refuses it, and keeps only the wanted members' spans.
 * Below {@link DEFAULT_SCAN_THRESHOLD} the document is first parsed whole with `JSON.parse`,
 * which is as fast for small documents as the scan run cold in a fresh process.
 */
import { Buffer } from "node:buffer";
import { MAX_NESTING, scanJson } from "../json/scan.js";

export { MAX_NESTING } from "../json/scan.js";

/** Documents smaller than this are parsed whole before they are scanned for spans. */
export const DEFAULT_SCAN_THRESHOLD = 1536 * 1024;

/** The JSON type of a document's top-level value. */
export type TopLevelKind = "object" | "array" | "string" | "number" | "boolean" | "null";

/** Where the wanted top-level members' values are. */
export interface Located {
  /** Type of the top-level value. Members are only ever found in an `object`. */
  readonly kind: TopLevelKind;
  /** Byte spans `[start, end)` of the wanted members the top-level object has (last occurrence of each). */
  readonly spans: ReadonlyMap<string, readonly [number, number]>;
  /** `scan` when the scan alone found them, `parse` when the whole document was parsed. */
  readonly method: "scan" | "parse";
}

/** What {@link extractTopLevel} found. */
export interface Extracted {
  readonly kind: TopLevelKind;
  /** The wanted members the top-level object has (own properties), with their parsed values. */
  readonly members: ReadonlyMap<string, unknown>;
  readonly method: "scan" | "parse";
}

export interface ExtractOptions {
  /** Documents of at least this many bytes are only scanned; smaller ones parsed whole first. */
  readonly scanThreshold?: number | undefined;
}

/** A document nested deeper than the tool accepts ({@link MAX_NESTING} levels). */
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

/**
 * The spans of the members `names` of the top-level object of the JSON document `bytes`
 * (UTF-8). Accepts and refuses exactly the documents `JSON.parse` does, plus the nesting limit.
 *
 * @throws SyntaxError (from `JSON.parse`) when the document is not valid JSON;
 *   {@link NestingError} when it is nested too deep.
 */
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
  // Not JSON, or not an object: JSON.parse says which (and throws the SyntaxError a caller reports).
  const kind = kindOf(JSON.parse(decode(bytes)));
  if (kind === "object") throw new SyntaxError("the document could not be scanned");
  return { kind, spans: new Map(), method: "parse" };
}

/**
 * The members `names` of the top-level object of `bytes`, parsed with `JSON.parse` (numbers
 * become JS numbers): what `JSON.parse(text)` would give for every valid document nested no
 * deeper than {@link MAX_NESTING}.
 *
 * @throws SyntaxError when the document is not valid JSON; {@link NestingError} when it is nested too deep.
 */
export function extractTopLevel(bytes: Uint8Array, names: readonly string[], options: ExtractOptions = {}): Extracted {
  const { kind, spans, method } = locateTopLevel(bytes, names, options);
  const members = new Map<string, unknown>();
  for (const [name, [start, end]] of spans) members.set(name, JSON.parse(decode(bytes.subarray(start, end))));
  return { kind, members, method };
}

/** `JSON.parse(text).outputs` of a top-level object (undefined without one). @throws SyntaxError when not JSON. */
export function extractOutputs(bytes: Uint8Array, options: ExtractOptions = {}): unknown {
  return extractTopLevel(bytes, ["outputs"], options).members.get("outputs");
}

/** The spans of {@link locateTopLevel}, or null when the document is not a top-level object that scans cleanly. */
export function scanTopLevel(b: Uint8Array, names: readonly string[]): Map<string, readonly [number, number]> | null {
  const s = scanJson(b, names);
  return s.end() === undefined ? (s.spans as Map<string, readonly [number, number]>) : null;
}
