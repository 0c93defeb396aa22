/** Top-level members of a JSON document as `JSON.parse` gives them, through the reader's own locate (tests and benches). */
import { Buffer } from "node:buffer";
import { scanJson } from "../../src/json/scan.js";
import { locateTopLevel, type Located } from "../../src/remote-state/fetch-outputs.js";

export { MAX_NESTING } from "../../src/json/scan.js";
export { DEFAULT_SCAN_THRESHOLD, NestingError } from "../../src/remote-state/fetch-outputs.js";

export type Extracted = Omit<Located, "spans"> & { readonly members: ReadonlyMap<string, unknown> };

interface ExtractOptions {
  /** Documents of at least this many bytes are only scanned. */
  readonly scanThreshold?: number | undefined;
}

const view = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

/** The members `names` as `JSON.parse(text)` gives them; throws as `locateTopLevel`. */
export function extractTopLevel(bytes: Uint8Array, names: readonly string[], options: ExtractOptions = {}): Extracted {
  const { kind, spans, method } = locateTopLevel(view(bytes), names, options.scanThreshold);
  const members = new Map<string, unknown>();
  for (const [name, [start, end]] of spans) members.set(name, JSON.parse(view(bytes).toString("utf8", start, end)));
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
