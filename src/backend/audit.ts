/**
 * The audit log (docs/decisions/076): one JSON line per change made through `objstate serve`,
 * kept in the bucket as one object per UTC day under `{prefix}/@objstate/audit/`, so every
 * replica over the same bucket appends to, and reads, the same log. Appends are read, add,
 * conditional write (`If-Match` on the ETag read, `If-None-Match` for a new day), retried on a
 * conflict, so a line another replica wrote is never overwritten. The record is built here
 * from a {@link Principal} and what the change did; nothing else of a request (headers, a
 * password, a token, a state) can reach it.
 */
import { ObjstateError, isObjstateError } from "../errors.js";
import { auditClash, auditPrefix, type Layout } from "../config/layout.js";
import { parseDuration } from "../config/setting-parsers.js";
import type { ObjectStoreDriver } from "../store/types.js";
import { md5Hex } from "../util/md5.js";
import type { OidcIdentity, Principal } from "./principal.js";

/** What a change did. Readers must accept actions they do not know. */
export type AuditAction = "write" | "delete-workspace" | "lock" | "unlock" | "force-unlock" | "rollback" | (string & {});

/** `ok`: done; `refused`: the request was turned down (a role, a lock held by another); `failed`: it broke on the way. */
export type AuditOutcome = "ok" | "refused" | "failed";

/** The principal as an audit line names it: only these fields, never a credential. */
export interface AuditPrincipal {
  readonly name: string;
  readonly via: string;
  readonly tokenId?: string;
  readonly oidc?: OidcIdentity;
}

/** What the caller tells the log about one change. */
export interface AuditEntry {
  readonly principal: Principal;
  readonly action: AuditAction;
  readonly workspace: string;
  /** Where the request came in: `http` (the tool's backend protocol), `api` (`/api/v1`), `console`. */
  readonly surface: "http" | "api" | "console";
  readonly outcome: AuditOutcome;
  /** The lock the change was made under, or the lock taken or released. */
  readonly lockId?: string | undefined;
  /** The version written: its serial and MD5 (the version history lists with that serial). */
  readonly serial?: number | undefined;
  readonly md5?: string | undefined;
  /** A rollback: the version whose content it restored. */
  readonly from?: string | undefined;
  /** A failed or refused change: its error code and HTTP status. */
  readonly code?: string | undefined;
  readonly status?: number | undefined;
}

/** One line of the log, as stored and as `GET /api/v1/audit` returns it. */
export interface AuditRecord {
  /** UTC ISO time the server recorded the change. */
  readonly time: string;
  readonly principal: AuditPrincipal;
  readonly action: AuditAction;
  readonly workspace: string;
  readonly surface: string;
  readonly outcome: AuditOutcome;
  readonly lockId?: string;
  readonly serial?: number;
  readonly md5?: string;
  readonly from?: string;
  readonly code?: string;
  readonly status?: number;
}

/** Options of {@link AuditLog}. */
export interface AuditLogOptions {
  /** How long an append may take, retries included, before the request moves on and the line waits in memory (default 5 s). */
  readonly deadlineMs?: number | undefined;
  /** Lines held in memory while the store cannot take them (default 10,000); older ones go to `onOverflow`. */
  readonly maxPending?: number | undefined;
  /** Largest day object before the day goes on in a next part (default 64 KiB): each append rewrites its part, and a versioned bucket keeps each rewrite. */
  readonly partBytes?: number | undefined;
  /** Lines the store could not take and the memory could not hold (overflow, or left at `close`): the server logs them. */
  readonly onOverflow?: ((line: string) => void) | undefined;
  /** An append that failed (it is retried): the server logs the code. */
  readonly onError?: ((error: unknown) => void) | undefined;
  readonly now?: (() => Date) | undefined;
}

export const AUDIT_DEFAULT_DEADLINE_MS = 5_000;
const DEFAULT_MAX_PENDING = 10_000;
const DEFAULT_PART_BYTES = 64 * 1024;
/** Pause before the next try after a conflict (another replica appended): short, jittered. */
const CONFLICT_PAUSE_MS = 20;
/** Pause before retrying the store after a failure; doubles up to {@link RETRY_MAX_MS}. */
const RETRY_BASE_MS = 250;
const RETRY_MAX_MS = 30_000;
const CONTENT_TYPE = "application/x-ndjson";
/** Versions of a part looked through after an append for appends it may have crossed. */
const CROSSED_MAX = 100;

/** `2026-11-26.jsonl` (part 0) or `2026-11-26.3.jsonl`: the day and the part of a key's last segment. */
const PART_NAME = /^(\d{4}-\d{2}-\d{2})(?:\.(\d{1,6}))?\.jsonl$/;

/** The principal fields an audit line keeps: copied one by one, so nothing else of a value can slip in. */
export function auditPrincipal(p: Principal): AuditPrincipal {
  const out: { name: string; via: string; tokenId?: string; oidc?: AuditPrincipal["oidc"] } = { name: p.name, via: p.via };
  if (p.tokenId !== undefined) out.tokenId = p.tokenId;
  if (p.oidc !== undefined) {
    const claims: Record<string, string> = {};
    for (const [k, v] of Object.entries(p.oidc.claims)) if (typeof v === "string") claims[k] = v;
    out.oidc = { issuer: p.oidc.issuer, subject: p.oidc.subject, claims };
  }
  return out;
}

/** The line's record, fields in a fixed order, unset ones left out. */
export function auditRecord(entry: AuditEntry, time: Date): AuditRecord {
  const r: Record<string, unknown> = {
    time: time.toISOString(),
    principal: auditPrincipal(entry.principal),
    action: entry.action,
    workspace: entry.workspace,
    surface: entry.surface,
    outcome: entry.outcome,
  };
  if (entry.lockId !== undefined) r["lockId"] = entry.lockId;
  if (entry.serial !== undefined) r["serial"] = entry.serial;
  if (entry.md5 !== undefined) r["md5"] = entry.md5;
  if (entry.from !== undefined) r["from"] = entry.from;
  if (entry.code !== undefined) r["code"] = entry.code;
  if (entry.status !== undefined) r["status"] = entry.status;
  return r as unknown as AuditRecord;
}

/**
 * `?since=` of the audit route, parsed once: an ISO date (`2026-11-26`, midnight UTC), an ISO
 * time with its zone (`2026-11-26T10:00:00Z`, `…+01:00`), or a duration back from `now`
 * (`30m`, `24h`, `7d`). `BAD_REQUEST` naming `label` otherwise.
 */
export function parseSince(raw: string, now: Date, label = "?since="): Date {
  const t = raw.trim();
  const days = /^(\d{1,4})d$/.exec(t);
  const ms = days !== null ? Number(days[1]) * 86_400_000 : parseDuration(t);
  if (ms !== undefined) return new Date(now.getTime() - ms);
  if (/^\d{4}-\d{2}-\d{2}$/.test(t) || /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(t)) {
    const d = new Date(/T/.test(t) ? t : `${t}T00:00:00Z`);
    if (!Number.isNaN(d.getTime())) return d;
  }
  throw new ObjstateError(
    "BAD_REQUEST",
    `${label}${JSON.stringify(raw).slice(1, -1)} must be an ISO date (2026-11-26), an ISO time with its zone (2026-11-26T10:00:00Z) or a duration back from now (30m, 24h, 7d)`,
    { details: { since: raw } },
  );
}

/** What {@link AuditLog.read} returns. */
export interface AuditPage {
  /** Oldest first. */
  readonly records: AuditRecord[];
  /** More lines matched than `limit`: ask again with `since` set to the last record's time. */
  readonly truncated: boolean;
  /** Lines that were not an audit record (a damaged or hand-edited day object). */
  readonly unreadable: number;
}

/** Options of {@link AuditLog.read}. */
export interface AuditReadOptions {
  readonly since: Date;
  readonly workspace?: string | undefined;
  readonly limit: number;
}

interface Pending {
  readonly line: string;
  readonly day: string;
  readonly settle: Array<(stored: boolean) => void>;
  /** A write that carried it failed without an answer (a timeout): it may be stored already. */
  inDoubt: boolean;
}

/**
 * The audit log of one bucket and layout. {@link record} queues a line and appends it with the
 * lines queued meanwhile (one append per batch, one batch at a time per process); it resolves
 * true once stored, false when the deadline passed first: the line then stays queued and is
 * retried in the background (docs/decisions/076 says why a request does not fail for it).
 */
export class AuditLog {
  private readonly prefix: string;
  private readonly deadlineMs: number;
  private readonly maxPending: number;
  private readonly partBytes: number;
  private readonly now: () => Date;
  private readonly queue: Pending[] = [];
  /** The part each day's appends go to (learnt; a full part moves it on). */
  private readonly parts = new Map<string, number>();
  private running: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs = RETRY_BASE_MS;
  private closed = false;
  private versioned: Promise<boolean> | undefined;
  /**
   * The part this log wrote last, as it wrote it: the next append usually goes to it, and
   * then needs no read (its condition is the ETag the write gave it; a conflict reads).
   * Only where the store's ETags are the MD5 of the bytes (seen on a read).
   */
  private last: { key: string; etag: string; body: Buffer } | undefined;
  private etagsAreMd5 = false;

  constructor(
    private readonly store: ObjectStoreDriver,
    layout: Layout,
    private readonly options: AuditLogOptions = {},
  ) {
    if (auditClash(layout)) {
      throw new ObjstateError(
        "INVALID_LAYOUT",
        `the default workspace's state key ${JSON.stringify(layout.key)} lies under ${auditPrefix(layout)}, where objstate serve keeps its audit log: choose a key that does not start with @objstate/`,
        { details: { key: layout.key } },
      );
    }
    this.prefix = auditPrefix(layout);
    this.deadlineMs = options.deadlineMs ?? AUDIT_DEFAULT_DEADLINE_MS;
    this.maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
    this.partBytes = options.partBytes ?? DEFAULT_PART_BYTES;
    this.now = options.now ?? ((): Date => new Date());
  }

  /** Key of a day's part: `{prefix}/@objstate/audit/2026-11-26.jsonl`, then `2026-11-26.1.jsonl`, …. */
  dayKey(day: string, part = 0): string {
    return `${this.prefix}${day}${part === 0 ? "" : `.${part}`}.jsonl`;
  }

  /** Lines waiting for the store. */
  get pending(): number {
    return this.queue.length;
  }

  /** Queue the change's line; true once it is stored, false when it is still waiting at the deadline. */
  record(entry: AuditEntry): Promise<boolean> {
    const rec = auditRecord(entry, this.now());
    const line = `${JSON.stringify(rec)}\n`;
    if (this.closed) {
      this.options.onOverflow?.(line);
      return Promise.resolve(false);
    }
    return new Promise<boolean>((resolve) => {
      const stored = new Promise<boolean>((settle) => this.queue.push({ line, day: rec.time.slice(0, 10), settle: [settle], inDoubt: false }));
      const timer = setTimeout(() => resolve(false), this.deadlineMs);
      void stored.then((ok) => {
        clearTimeout(timer);
        resolve(ok);
      });
      this.trim();
      this.kick();
    });
  }

  /**
   * Store the queued lines now (not after the pause that follows a failure), within
   * `deadlineMs`; a failed append ends the try. True when no line is left waiting.
   */
  async flush(deadlineMs = this.deadlineMs): Promise<boolean> {
    const end = Date.now() + deadlineMs;
    // Now, not when the pause after a failure ends.
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    while (this.queue.length > 0 && Date.now() < end) {
      this.kick();
      const run = this.running;
      if (run === undefined) break;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([run, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(1, end - Date.now()))))]);
      clearTimeout(timer);
    }
    return this.queue.length === 0;
  }

  /** Stop retrying: try once more within `deadlineMs`, then hand what is left to `onOverflow`. */
  async close(deadlineMs = this.deadlineMs): Promise<void> {
    await this.flush(deadlineMs);
    this.closed = true;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    for (const p of this.queue.splice(0)) {
      this.options.onOverflow?.(p.line);
      for (const s of p.settle) s(false);
    }
  }

  /** Lines over {@link AuditLogOptions.maxPending}, oldest first, go to `onOverflow` (the server's log) rather than nowhere. */
  private trim(): void {
    while (this.queue.length > this.maxPending) {
      const p = this.queue.shift() as Pending;
      this.options.onOverflow?.(p.line);
      for (const s of p.settle) s(false);
    }
  }

  private kick(): void {
    if (this.running !== undefined || this.queue.length === 0 || this.closed) return;
    if (this.retryTimer !== undefined) return; // a retry after a failure is already due
    this.running = this.drain().finally(() => {
      this.running = undefined;
    });
  }

  /** Append queued lines, a day's batch at a time, until the queue is empty or the store fails. */
  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const day = (this.queue[0] as Pending).day;
      // One day's lines, at most a part's worth (a backlog after an outage goes in several appends).
      let n = 0;
      let bytes = 0;
      while (n < this.queue.length && (this.queue[n] as Pending).day === day && (n === 0 || bytes + (this.queue[n] as Pending).line.length <= this.partBytes)) {
        bytes += (this.queue[n] as Pending).line.length;
        n++;
      }
      const batch = this.queue.slice(0, n);
      try {
        await this.append(day, batch, Date.now() + this.deadlineMs);
      } catch (e) {
        this.options.onError?.(e);
        this.scheduleRetry();
        return;
      }
      this.retryMs = RETRY_BASE_MS;
      // Lines queued meanwhile stay; only the batch leaves (the queue may have been trimmed meanwhile).
      for (const p of batch) {
        const i = this.queue.indexOf(p);
        if (i >= 0) this.queue.splice(i, 1);
        for (const s of p.settle) s(true);
      }
    }
  }

  private scheduleRetry(): void {
    if (this.closed) return;
    const pause = this.retryMs * (0.5 + Math.random());
    this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.kick();
    }, pause);
    this.retryTimer.unref();
  }

  /**
   * Add `lines` to the day's current part: read it, write it back longer on the condition that
   * it is still what was read (or still absent), and on a conflict read again. A part past
   * `partBytes` sends the lines to the next one. Every store call counts against `end`.
   */
  private async append(day: string, batch: readonly Pending[], end: number): Promise<void> {
    for (;;) {
      const part = this.parts.get(day) ?? 0;
      const key = this.dayKey(day, part);
      const mine = this.last?.key === key && !batch.some((p) => p.inDoubt) ? this.last : undefined;
      this.last = undefined;
      const current = mine !== undefined ? { body: mine.body, meta: { etag: mine.etag } } : await within(this.store.get(key), end, key);
      if (mine === undefined && current !== null && current.body.length > 0) this.etagsAreMd5 = current.meta.etag === md5Hex(current.body);
      // A line whose earlier write went unanswered may have landed: never add it twice.
      const text = batch.some((p) => p.inDoubt) && current !== null ? current.body.toString("utf8") : "";
      const fresh = batch.filter((p) => !p.inDoubt || !text.includes(p.line));
      if (fresh.length === 0) return;
      const add = Buffer.from(fresh.map((p) => p.line).join(""), "utf8");
      if (current !== null && current.body.length > 0 && current.body.length + add.length > this.partBytes) {
        this.parts.set(day, part + 1);
        continue;
      }
      let body = add;
      if (current !== null && current.body.length > 0) {
        // A part whose last line lost its newline (edited by hand) keeps the next line apart.
        const sep = current.body[current.body.length - 1] === 0x0a ? [] : [Buffer.from("\n")];
        body = Buffer.concat([current.body, ...sep, add]);
      }
      const condition = current === null ? { ifNoneMatch: true } : current.meta.etag === undefined ? {} : { ifMatch: current.meta.etag };
      try {
        await within(this.store.put(key, body, { contentType: CONTENT_TYPE, ...condition }), end, key);
      } catch (e) {
        if (!isObjstateError(e, "PRECONDITION_FAILED")) {
          for (const p of fresh) p.inDoubt = true;
          throw e;
        }
        // Another replica appended between the read and the write (or since this log's last
        // write, which it took for the part): read its lines and add ours again.
        if (Date.now() >= end) throw unavailable(key, "another server kept appending to it", e);
        if (mine === undefined) await sleep(CONFLICT_PAUSE_MS * (0.5 + Math.random()));
        continue;
      }
      const lost = await this.crossed(key, body, current?.meta.etag ?? null, end);
      if (lost.length === 0) {
        if (this.etagsAreMd5) this.last = { key, etag: md5Hex(body), body };
        return;
      }
      // Lines of a replica whose append ours replaced: appended again (they are not ours to drop).
      await this.append(
        day,
        lost.map((line) => ({ line, day, settle: [], inDoubt: true })),
        end,
      );
      return;
    }
  }

  /**
   * Where the store ignores conditional writes (Ceph RGW on a versioned bucket: the driver
   * checks `If-Match` itself, and another replica can write between its check and ours), an
   * append can replace another that was based on the same part. A versioned bucket keeps the
   * replaced one: the versions between the one this append read (`base`) and ours are such
   * crossed appends, and the lines they had that ours lacks are returned. An append that
   * landed after ours finds ours the same way, so every crossing is repaired by its later side.
   */
  private async crossed(key: string, ours: Buffer, base: string | null, end: number): Promise<string[]> {
    this.versioned ??= this.store.versioning().then(
      (st) => st === "enabled",
      () => false,
    );
    if (!(await within(this.versioned, end, key))) return [];
    const etag = md5Hex(ours);
    const between: string[] = [];
    let seenOurs = false;
    const listing = (async (): Promise<void> => {
      let n = 0;
      for await (const v of this.store.listVersions(key, { pageSize: 20 })) {
        if (++n > CROSSED_MAX) return;
        const tag = v.etag?.replace(/"/g, "");
        if (!seenOurs) {
          seenOurs = tag === etag;
          continue;
        }
        if (v.deleteMarker) continue;
        if (base !== null && tag === base.replace(/"/g, "")) return;
        between.push(v.versionId);
      }
    })();
    await within(listing, end, key);
    if (between.length === 0) return [];
    const have = new Set(ours.toString("utf8").split("\n"));
    const lost: string[] = [];
    for (const versionId of between) {
      const got = await within(this.store.get(key, { versionId }), end, key);
      for (const text of got?.body.toString("utf8").split("\n") ?? []) {
        if (text.trim() === "" || have.has(text)) continue;
        have.add(text);
        lost.push(`${text}\n`);
      }
    }
    return lost;
  }

  /**
   * Lines from `since` on (oldest first), of one workspace when given, at most `limit`. Reads
   * the day objects from `since`'s day on; each read has the log's deadline.
   */
  async read(options: AuditReadOptions): Promise<AuditPage> {
    const firstDay = options.since.toISOString().slice(0, 10);
    const end = Date.now() + this.deadlineMs;
    const keys: { key: string; day: string; part: number }[] = [];
    const listing = (async (): Promise<void> => {
      for await (const key of this.store.list(this.prefix)) {
        const m = PART_NAME.exec(key.slice(this.prefix.length));
        if (m === null || (m[1] as string) < firstDay) continue;
        keys.push({ key, day: m[1] as string, part: Number(m[2] ?? 0) });
      }
    })();
    await within(listing, end, this.prefix);
    keys.sort((a, b) => (a.day === b.day ? a.part - b.part : a.day < b.day ? -1 : 1));
    const records: AuditRecord[] = [];
    let unreadable = 0;
    const since = options.since.getTime();
    // A day is read whole (all its parts) and put in time order: replicas append their lines
    // a little after the change, so the object's order is not quite the changes' order.
    for (let i = 0; i < keys.length;) {
      const day: { rec: AuditRecord; at: number }[] = [];
      const name = (keys[i] as { day: string }).day;
      for (; i < keys.length && (keys[i] as { day: string }).day === name; i++) {
        const key = (keys[i] as { key: string }).key;
        const got = await within(this.store.get(key), end, key);
        if (got === null) continue;
        for (const text of got.body.toString("utf8").split("\n")) {
          if (text.trim() === "") continue;
          const rec = parseRecord(text);
          if (rec === undefined) {
            unreadable++;
            continue;
          }
          const at = Date.parse(rec.time);
          if (at < since || (options.workspace !== undefined && rec.workspace !== options.workspace)) continue;
          day.push({ rec, at });
        }
      }
      day.sort((a, b) => a.at - b.at); // stable: lines of one millisecond keep their order
      for (const { rec } of day) {
        if (records.length >= options.limit) return { records, truncated: true, unreadable };
        records.push(rec);
      }
    }
    return { records, truncated: false, unreadable };
  }
}

/** A stored line as a record, or undefined when it is not one. */
function parseRecord(text: string): AuditRecord | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  const p = o["principal"] as Record<string, unknown> | undefined;
  if (typeof o["time"] !== "string" || Number.isNaN(Date.parse(o["time"])) || typeof o["workspace"] !== "string" || typeof o["action"] !== "string")
    return undefined;
  if (typeof p !== "object" || p === null || typeof p["name"] !== "string") return undefined;
  return o as unknown as AuditRecord;
}

function unavailable(key: string, why: string, cause?: unknown): ObjstateError {
  return new ObjstateError("AUDIT_UNAVAILABLE", `the audit log's object ${key} could not be read or appended to: ${why}`, { cause, details: { key } });
}

/** `p`, or `AUDIT_UNAVAILABLE` once `end` (epoch ms) passed: no store call of the log waits longer than its deadline. */
async function within<T>(p: Promise<T>, end: number, key: string): Promise<T> {
  const left = end - Date.now();
  if (left <= 0) {
    p.catch(() => undefined);
    throw unavailable(key, "its deadline passed");
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(unavailable(key, `no answer within ${Math.ceil(left)} ms`)), left);
  });
  p.catch(() => undefined);
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
