/**
 * A resumable scanner of a JSON object's top level, fed in pieces: it records where each
 * top-level member's value lies (offsets in the whole text) and can stop where a chosen
 * member's string value begins, so an envelope's `encrypted_data` is decoded as it arrives
 * and a state's `serial` and `lineage` are found without parsing the rest. It does not
 * check the grammar: what it records is parsed afterwards with `JSON.parse`.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** One top-level member: its key and the offsets of its value `[start, end)`. */
export interface Member {
  readonly key: string;
  readonly start: number;
  end: number;
}

/** The longest top-level key recorded; longer keys are recorded cut (none of ours is). */
const MAX_KEY = 64;

export class TopLevelScanner {
  /** Offset (in the whole text) of the next byte to scan. */
  offset = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** Where the scanner is within a member of the top level. */
  private phase: "key" | "colon" | "value" | "scalar" | "after" = "key";
  private keyBytes: number[] = [];
  private current: Member | undefined;
  readonly members: Member[] = [];
  /** The closing `}` of the top level was seen. */
  closed = false;
  /** Not an object, or broken in a way the scanner cannot follow. */
  broken = false;

  /**
   * Scan `b` (the next piece of text). Returns the offset in `b` just after the opening
   * quote of `stopAt`'s string value when it begins in this piece (the scanner then stands
   * inside that string: call {@link skipString} past it), else undefined.
   */
  scan(b: Uint8Array, stopAt?: string): number | undefined {
    const base = this.offset;
    let i = 0;
    const n = b.length;
    while (i < n && !this.broken) {
      if (this.closed) {
        // Only whitespace may follow the top level (JSON.parse and Go refuse anything else).
        const c = b[i];
        if (!(c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09)) this.broken = true;
        i++;
        continue;
      }
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          if (this.depth === 1 && this.phase === "key" && this.keyBytes.length < MAX_KEY) this.keyBytes.push(BACKSLASH, b[i] as number);
          i++;
          continue;
        }
        const q = b.indexOf(QUOTE, i);
        const bs = b.indexOf(BACKSLASH, i);
        const stop = q === -1 ? n : q;
        if (bs !== -1 && bs < stop) {
          if (this.depth === 1 && this.phase === "key") this.collectKey(b, i, bs);
          this.escaped = true;
          i = bs + 1;
          continue;
        }
        if (this.depth === 1 && this.phase === "key") this.collectKey(b, i, stop);
        if (q === -1) break;
        this.inString = false;
        i = q + 1;
        if (this.depth === 1) {
          if (this.phase === "key") this.phase = "colon";
          else if (this.phase === "value") this.endValue(base + i);
        }
        continue;
      }
      const c = b[i] as number;
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
        if (this.phase === "scalar" && this.depth === 1) this.endValue(base + i);
        i++;
        continue;
      }
      if (this.phase === "scalar" && this.depth === 1 && (c === 0x2c || c === 0x7d)) this.endValue(base + i);
      if (c === QUOTE) {
        this.inString = true;
        if (this.depth === 1) {
          if (this.phase === "key") this.keyBytes = [];
          else if (this.phase === "value") {
            this.beginValue(base + i);
            if (stopAt !== undefined && this.current?.key === stopAt) {
              this.offset = base + i + 1;
              return i + 1;
            }
          }
        }
      } else if (c === 0x7b || c === 0x5b) {
        if (this.depth === 0) {
          if (c !== 0x7b) this.broken = true;
          this.phase = "key";
        } else if (this.depth === 1 && this.phase === "value") this.beginValue(base + i);
        this.depth++;
      } else if (c === 0x7d || c === 0x5d) {
        this.depth--;
        if (this.depth === 1 && this.current !== undefined && this.phase === "value") this.endValue(base + i + 1);
        if (this.depth === 0) this.closed = true;
        if (this.depth < 0) this.broken = true;
      } else if (this.depth === 1) {
        if (c === 0x3a && this.phase === "colon") this.phase = "value";
        else if (c === 0x2c) this.phase = "key";
        else if (this.phase === "value") {
          this.beginValue(base + i);
          this.phase = "scalar";
        }
      } else if (this.depth === 0) this.broken = true;
      i++;
    }
    this.offset = base + n;
    return undefined;
  }

  /**
   * Standing inside a string value (after {@link scan} stopped), find its closing quote in
   * `b`: returns its offset in `b` (the scanner moves past it) or -1 when the string goes on
   * (the whole piece belongs to it). A backslash makes `escapes` true: base64 never has one.
   */
  skipString(b: Uint8Array): { end: number; escapes: boolean } {
    const q = b.indexOf(QUOTE);
    const stop = q === -1 ? b.length : q;
    const bs = b.indexOf(BACKSLASH);
    const escapes = bs !== -1 && bs < stop;
    if (q === -1) {
      this.offset += b.length;
      return { end: -1, escapes };
    }
    this.inString = false;
    this.endValue(this.offset + q + 1);
    this.offset += q + 1;
    return { end: q, escapes };
  }

  private collectKey(b: Uint8Array, from: number, to: number): void {
    for (let j = from; j < to && this.keyBytes.length < MAX_KEY; j++) this.keyBytes.push(b[j] as number);
  }

  private beginValue(at: number): void {
    const raw = Buffer.from(this.keyBytes).toString("utf8");
    let key = raw;
    if (raw.includes("\\")) {
      try {
        key = JSON.parse(`"${raw}"`) as string;
      } catch {
        key = raw;
      }
    }
    this.current = { key, start: at, end: -1 };
    this.phase = "value";
  }

  private endValue(at: number): void {
    if (this.current !== undefined) {
      this.current.end = at;
      this.members.push(this.current);
      this.current = undefined;
    }
    this.phase = "after";
  }
}

/** The member named `key` (the last one, as `JSON.parse` keeps the last of duplicates). */
export function memberOf(members: readonly Member[], key: string): Member | undefined {
  for (let i = members.length - 1; i >= 0; i--) if ((members[i] as Member).key === key) return members[i];
  return undefined;
}
