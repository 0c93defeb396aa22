/**
 * The top-level scan of extract-outputs.ts, fed while the state downloads: each call to
 * `feed` advances over the bytes that have arrived, so by the time the last chunk lands
 * almost all of the scanning is done. Nested values (a state's huge `resources`) are
 * checked against the JSON grammar by the resumable check of json/validate.ts (so the scan
 * refuses what `JSON.parse` refuses); the small pieces at the top level (keys, scalars) are
 * simply re-read from the start of their member when a chunk ends inside one. Anything
 * unusual gives up (`finish` returns null) and the caller falls back to the whole-buffer
 * extractor, which has the full-parse fallback.
 */
import { encodeNames, isWs, keyName, SCALAR, skipWs, strictString } from "../json/bytes.js";
import { ContainerCheck, MAX_NESTING, NEED_MORE } from "../json/validate.js";

const QUOTE = 0x22;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const COLON = 0x3a;
/** A top-level string or scalar longer than this is not re-read chunk after chunk: give up. */
const MAX_REREAD = 1024 * 1024;

const enum Stage {
  Start,
  First,
  Member,
  Container,
  After,
  Trail,
  Failed,
}

/** Incremental scan for the wanted top-level members of a JSON object arriving in order. */
export class StreamingTopLevelScan {
  private readonly wanted: ReturnType<typeof encodeNames>;
  private readonly spans = new Map<string, readonly [number, number]>();
  private stage = Stage.Start;
  private pos = 0;
  private skip: ContainerCheck | undefined;
  private pending: string | undefined;
  private valueStart = 0;

  constructor(names: readonly string[]) {
    this.wanted = encodeNames(names);
  }

  /** Advance over `b[0..limit)`; `b` is the whole (partly filled) buffer, always the same one. */
  feed(b: Uint8Array, limit: number): void {
    const final = limit === b.length;
    const v = limit === b.length ? b : b.subarray(0, limit);
    while (this.stage !== Stage.Failed) {
      switch (this.stage) {
        case Stage.Start: {
          const i = skipWs(v, this.pos);
          if (i >= limit) return;
          if (v[i] !== OPEN_BRACE) return this.fail();
          this.pos = i + 1;
          this.stage = Stage.First;
          break;
        }
        case Stage.First: {
          const i = skipWs(v, this.pos);
          if (i >= limit) return;
          if (v[i] === CLOSE_BRACE) {
            this.pos = i + 1;
            this.stage = Stage.Trail;
          } else {
            this.stage = Stage.Member;
          }
          break;
        }
        case Stage.Member: {
          if (!this.member(v, limit, final)) return;
          break;
        }
        case Stage.Container: {
          const skip = this.skip as ContainerCheck;
          const end = skip.run(v, limit);
          if (end === NEED_MORE) return;
          if (end < 0) return this.fail();
          this.record(end);
          break;
        }
        case Stage.After: {
          const i = skipWs(v, this.pos);
          if (i >= limit) return;
          if (v[i] === COMMA) {
            this.pos = i + 1;
            this.stage = Stage.Member;
          } else if (v[i] === CLOSE_BRACE) {
            this.pos = i + 1;
            this.stage = Stage.Trail;
          } else {
            return this.fail();
          }
          break;
        }
        case Stage.Trail: {
          const i = skipWs(v, this.pos);
          this.pos = i;
          if (i < limit) this.fail();
          return;
        }
      }
    }
  }

  /**
   * Parse one member from `pos` (a key, `:`, and a value or the start of a container).
   * Returns false when the bytes so far end inside it (it is re-read next time).
   */
  private member(v: Uint8Array, limit: number, final: boolean): boolean {
    const start = skipWs(v, this.pos);
    const wait = (): boolean => {
      if (final || limit - start > MAX_REREAD) this.fail();
      return false;
    };
    if (start >= limit) return wait();
    if (v[start] !== QUOTE) return (this.fail(), false);
    const keyEnd = strictString(v, start + 1);
    if (keyEnd < 0) return wait();
    let i = skipWs(v, keyEnd + 1);
    if (i >= limit) return wait();
    if (v[i] !== COLON) return (this.fail(), false);
    const valueStart = skipWs(v, i + 1);
    if (valueStart >= limit) return wait();
    const name = keyName(v, start + 1, keyEnd, this.wanted);
    const c = v[valueStart];
    this.pending = name;
    this.valueStart = valueStart;
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      this.skip = new ContainerCheck(valueStart, MAX_NESTING - 1);
      this.stage = Stage.Container;
      return true;
    }
    if (c === QUOTE) {
      const close = strictString(v, valueStart + 1);
      if (close < 0) return wait();
      this.record(close + 1);
      return true;
    }
    i = valueStart;
    while (i < limit && !isWs(v[i]) && v[i] !== COMMA && v[i] !== CLOSE_BRACE) i++;
    if (i >= limit && !final) return wait();
    const text = Buffer.from(v.buffer, v.byteOffset + valueStart, i - valueStart).toString("latin1");
    if (i === valueStart || !SCALAR.test(text)) return (this.fail(), false);
    this.record(i);
    return true;
  }

  private record(end: number): void {
    if (this.pending !== undefined) this.spans.set(this.pending, [this.valueStart, end]);
    this.pending = undefined;
    this.skip = undefined;
    this.pos = end;
    this.stage = Stage.After;
  }

  private fail(): void {
    this.stage = Stage.Failed;
  }

  /**
   * After the last byte was fed (`limit === b.length`): the spans of the wanted members'
   * values (last occurrence of each), or null when the scan gave up or the document did
   * not scan cleanly.
   */
  finish(b: Uint8Array): Map<string, readonly [number, number]> | null {
    this.feed(b, b.length);
    return this.stage === Stage.Trail && this.pos === b.length ? this.spans : null;
  }
}
