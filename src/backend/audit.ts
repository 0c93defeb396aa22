/**
 * The audit log (docs/decisions/076, 087): the changes made through `objstate serve`, each object holding the events that were
 * waiting for it, under `{prefix}/@objstate/audit/{day}/`, so replicas add to it without rewriting anything. Only a {@link Principal} and what the change did reach a record.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ObjstateError, isObjstateError } from "../errors.js";
import { auditClash, auditPrefix, type Layout } from "../config/layout.js";
import { parseDuration } from "../config/setting-parsers.js";
import { isPlainObject } from "../config/rules.js";
import type { ObjectStoreDriver } from "../store/types.js";
import type { Principal } from "./principal.js";
import { nodeCrypto } from "../util/builtins.js";

/** What a change did. Readers must accept actions they do not know. */
export type AuditAction = "write" | "delete-workspace" | "lock" | "unlock" | "force-unlock" | "rollback" | (string & {});

/** `ok`: done; `refused`: the request was turned down (a role, a lock held by another); `failed`: it broke on the way. */
export type AuditOutcome = "ok" | "refused" | "failed";

/** The principal as an audit line names it: only a {@link Principal}'s fields, never a credential. */
export type AuditPrincipal = Principal;

/** What the caller tells the log about one change. */
export interface AuditEntry {
  readonly principal: Principal;
  readonly action: AuditAction;
  readonly workspace: string;
  /** Where the request came in: `http` (the tool's backend protocol), `api` (`/api/v1`), `console`. */
  readonly surface: "http" | "api" | "console";
  readonly outcome: AuditOutcome;
  readonly lockId?: string | undefined;
  /** The version written: its serial and MD5. */
  readonly serial?: number | undefined;
  readonly md5?: string | undefined;
  /** A rollback: the version whose content it restored. */
  readonly from?: string | undefined;
  /** A failed or refused change: its error code and HTTP status. */
  readonly code?: string | undefined;
  readonly status?: number | undefined;
}

/** One line of the log, as stored and as `GET /api/v1/audit` returns it. */
export interface AuditRecord extends Omit<AuditEntry, "principal" | "surface"> {
  readonly time: string;
  readonly principal: AuditPrincipal;
  readonly surface: string;
}

export interface AuditLogOptions {
  /** How long storing an event may take, retries included, before it goes to `onLost` (default 5 s); reads have the same. */
  readonly deadlineMs?: number | undefined;
  /** An event the store did not take within the deadline (its JSON line). */
  readonly onLost?: ((line: string) => void) | undefined;
  /** A try that failed (it is retried within the deadline). */
  readonly onError?: ((error: unknown) => void) | undefined;
  readonly now?: (() => Date) | undefined;
}

/** Pause before the next try after a failure; doubles while the deadline allows. */
const RETRY_BASE_MS = 100;
const READ_BATCH = 8;
/** Most events in one object. */
const MAX_BATCH = 500;
/** Before decision 087: `2026-11-26.jsonl` or `2026-11-26.3.jsonl`, a day's part of appended lines (still read). */
const PART_NAME = /^(\d{4}-\d{2}-\d{2})(?:\.\d{1,6})?\.jsonl$/;
/** `2026-11-26/2026-11-26T10:00:00.000Z-1a2b3c4d5e6f.json`: one or more events, the key sorting by the latest one's time. */
const EVENT_NAME = /^(\d{4}-\d{2}-\d{2})\/(\d{4}-\d{2}-\d{2}T[\d:.]+Z)-[0-9a-f]+\.json$/;

/** The line's record, fields in a fixed order, unset ones left out. */
export function auditRecord(entry: AuditEntry, time: Date): AuditRecord {
  // The principal's fields are copied one by one, so nothing else of a value can slip in.
  const p = entry.principal;
  const principal: { name: string; via: string; tokenId?: string; oidc?: Principal["oidc"] } = { name: p.name, via: p.via };
  if (p.tokenId !== undefined) principal.tokenId = p.tokenId;
  if (p.oidc !== undefined) {
    const claims: Record<string, string> = {};
    for (const [k, v] of Object.entries(p.oidc.claims)) if (typeof v === "string") claims[k] = v;
    principal.oidc = { issuer: p.oidc.issuer, subject: p.oidc.subject, claims };
  }
  const r: Record<string, unknown> = {
    time: time.toISOString(),
    principal,
    action: entry.action,
    workspace: entry.workspace,
    surface: entry.surface,
    outcome: entry.outcome,
  };
  for (const k of ["lockId", "serial", "md5", "from", "code", "status"] as const) if (entry[k] !== undefined) r[k] = entry[k];
  return r as unknown as AuditRecord;
}

/** `?since=` of the audit route: an ISO date (midnight UTC), an ISO time with its zone, or a duration back from `now` (`30m`, `7d`). */
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

export interface AuditPage {
  /** Oldest first. */
  readonly records: AuditRecord[];
  /** More lines matched than `limit`: ask again with `since` set to the last record's time. */
  readonly truncated: boolean;
  /** Lines that were not an audit record. */
  readonly unreadable: number;
}

export interface AuditReadOptions {
  readonly since: Date;
  readonly workspace?: string | undefined;
  readonly limit: number;
}

/** The audit log of one bucket and layout: each object of events created once (`If-None-Match: *`) under a key of its own that sorts by their time. */
export class AuditLog {
  private readonly prefix: string;
  private readonly deadlineMs: number;
  private writing = 0;
  private readonly queue: Waiting[] = [];
  private flushing = false;

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
    this.deadlineMs = options.deadlineMs ?? 5_000;
  }

  get pending(): number {
    return this.writing;
  }

  /** Store the event, with those that arrive meanwhile, retrying within the deadline: false when the store did not take it in time (`onLost` has it). */
  record(entry: AuditEntry): Promise<boolean> {
    const rec = auditRecord(entry, this.options.now?.() ?? new Date());
    return new Promise((done) => {
      this.queue.push({ line: `${JSON.stringify(rec)}\n`, time: rec.time, end: Date.now() + this.deadlineMs, done });
      this.writing++;
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      const stored = await this.store1(batch);
      for (const w of batch) {
        this.writing--;
        if (!stored) this.options.onLost?.(w.line);
        w.done(stored);
      }
    }
    this.flushing = false;
  }

  /** One object of `batch`'s lines, keyed by its latest time (a reader skips it only when all its events are older), within the earliest deadline. */
  private async store1(batch: Waiting[]): Promise<boolean> {
    const time = batch.reduce((t, w) => (w.time > t ? w.time : t), "");
    const key = `${this.prefix}${time.slice(0, 10)}/${time}-${nodeCrypto().randomBytes(6).toString("hex")}.json`;
    const end = Math.min(...batch.map((w) => w.end));
    const body = Buffer.from(batch.map((w) => w.line).join(""), "utf8");
    for (let pause = RETRY_BASE_MS; ; pause *= 2) {
      try {
        await within(this.store.put(key, body, { contentType: "application/json", ifNoneMatch: true }), end, key);
        return true;
      } catch (e) {
        // The key is this batch's alone: there already means an earlier try landed unanswered.
        if (isObjstateError(e, "PRECONDITION_FAILED")) return true;
        this.options.onError?.(e);
        // No try starts past the deadline (it would only fail on it); a timer can fire late.
        const wait = pause * (0.5 + Math.random());
        if (Date.now() + wait >= end) return false;
        await sleep(wait);
        if (Date.now() >= end) return false;
      }
    }
  }

  /** Events from `since` on (oldest first), of one workspace when given, at most `limit`: a day at a time, within the deadline. */
  async read(options: AuditReadOptions): Promise<AuditPage> {
    const page: Filling = { records: [], truncated: false, unreadable: 0 };
    const end = Date.now() + this.deadlineMs;
    const sinceIso = options.since.toISOString();
    let day = "";
    let keys: string[] = [];
    const listing = (async (): Promise<void> => {
      for await (const key of this.store.list(this.prefix, { startAfter: `${this.prefix}${sinceIso.slice(0, 10)}` })) {
        const name = key.slice(this.prefix.length);
        const m = EVENT_NAME.exec(name) ?? PART_NAME.exec(name);
        if (m === null || (m[2] !== undefined && m[2] < sinceIso)) continue;
        if (m[1] !== day) {
          if (await this.readDay(keys, options, page, end)) return;
          [day, keys] = [m[1] as string, []];
        }
        keys.push(key);
      }
      await this.readDay(keys, options, page, end);
    })();
    await within(listing, end, this.prefix);
    return page;
  }

  /** Add one day's records to `page`, in time order (old parts whole, then events until enough match); true once full. */
  private async readDay(keys: string[], options: AuditReadOptions, page: Filling, end: number): Promise<boolean> {
    const found: AuditRecord[] = [];
    const take = async (batch: string[]): Promise<void> => {
      for (const got of await Promise.all(batch.map((key) => within(this.store.get(key), end, key)))) {
        for (const text of got?.body.toString("utf8").split("\n") ?? []) {
          if (text.trim() === "") continue;
          const rec = parseRecord(text);
          if (rec === undefined) page.unreadable++;
          else if (Date.parse(rec.time) >= options.since.getTime() && (options.workspace ?? rec.workspace) === rec.workspace) found.push(rec);
        }
      }
    };
    const parts = keys.filter((k) => k.endsWith(".jsonl"));
    const events = keys.filter((k) => !k.endsWith(".jsonl"));
    for (let i = 0; i < parts.length; i += READ_BATCH) await take(parts.slice(i, i + READ_BATCH));
    const need = found.length + options.limit - page.records.length + 1;
    for (let i = 0; i < events.length && found.length < need; i += READ_BATCH) await take(events.slice(i, i + READ_BATCH));
    found.sort((x, y) => Date.parse(x.time) - Date.parse(y.time)); // stable: a millisecond's events keep their key order
    for (const rec of found) {
      if (page.records.length >= options.limit) return (page.truncated = true);
      page.records.push(rec);
    }
    return false;
  }
}

/** An event waiting for its object. */
interface Waiting {
  readonly line: string;
  readonly time: string;
  readonly end: number;
  readonly done: (stored: boolean) => void;
}

type Filling = { records: AuditRecord[]; truncated: boolean; unreadable: number };

/** A stored line as a record, or undefined when it is not one. */
function parseRecord(text: string): AuditRecord | undefined {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(o) || !isPlainObject(o["principal"]) || typeof o["principal"]["name"] !== "string") return undefined;
  if (typeof o["time"] !== "string" || Number.isNaN(Date.parse(o["time"])) || typeof o["workspace"] !== "string" || typeof o["action"] !== "string")
    return undefined;
  return o as unknown as AuditRecord;
}

/** `p`, or `AUDIT_UNAVAILABLE` once `end` (epoch ms) passed: no store call of the log waits longer than its deadline. */
async function within<T>(p: Promise<T>, end: number, key: string): Promise<T> {
  p.catch(() => undefined);
  const unavailable = (why: string): ObjstateError =>
    new ObjstateError("AUDIT_UNAVAILABLE", `the audit log's object ${key} could not be read or written: ${why}`, { details: { key } });
  const left = end - Date.now();
  if (left <= 0) throw unavailable("its deadline passed");
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(unavailable(`no answer within ${Math.ceil(left)} ms`)), left);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
