/** The console's routes (`PAGES` in back.ts): who may do what, the pages' view models, reads and actions through `ctx.api`. */
import type { IncomingMessage, ServerResponse } from "node:http";
import { DEFAULT_WORKSPACE } from "../config/layout.js";
import { isObjstateError, ObjstateError, statusOf, type ErrorCode } from "../errors.js";
import { readBody } from "../io/http-body.js";
import { SENSITIVE } from "../state/diff.js";
import { CONTENT_SECURITY_POLICY, CSS, CSS_ETAG, CSS_PATH, JS, JS_ETAG, JS_PATH, LOCKS_PATH } from "./assets.js";
import { backFrom, mounted, PAGES, WORKSPACE, workspaceLink, workspacesLink, type Back } from "./back.js";
import { crossSiteReason, requestOrigin } from "./csrf.js";
import type { SafeHtml } from "./html.js";
import { query, renderMessage, workspaceUrl, type Frame } from "./layout.js";
import { lockText } from "./format.js";
import { renderDiff, renderDiffPicker, renderRollback } from "./pages/diff.js";
import { renderHistory } from "./pages/history.js";
import { renderForceUnlock, renderWorkspace } from "./pages/workspace.js";
import { filterWorkspaces, renderWorkspaces, sortByLastWrite } from "./pages/workspaces.js";
import { ENCRYPTED, encryptedOr, type ConsoleContext, type ConsoleLogEntry, type LockView } from "./types.js";

/** Versions the History page lists with `?all=1` (and the rollback confirmation searches). */
export const HISTORY_LIMIT = 1000;
/** Versions the History page lists at first (each is a ranged read of the store). */
export const HISTORY_PAGE = 100;
export const TIMELINE_LIMIT = 10;
const MAX_FORM_BYTES = 16 * 1024;

type Action = "force-unlock" | "rollback";

const FORM_ONLY = "The console's actions take a form (application/x-www-form-urlencoded).";
const CROSS_SITE = "Refused: this action must be posted from the console's own page.";

/** Messages after an action's redirect: fixed texts, so nothing from the URL is echoed. */
const DONE: Readonly<Record<string, string>> = {
  "force-unlock": "The lock was released.",
  rollback: "Rolled back: the new version is at the top of the history.",
};

const doneMessage = (done: string | null): string | undefined => (done !== null && Object.hasOwn(DONE, done) ? DONE[done] : undefined);

/** The code of each status the console refuses with (errors.ts maps it back to the status). */
const CODE_OF: Readonly<Record<number, ErrorCode>> = {
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  409: "STATE_CONFLICT",
  413: "BODY_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  421: "MISDIRECTED_REQUEST",
};

/** A refusal with its page's message and where the page links next (default: back where the user came from). */
function consoleError(status: number, message: string, back?: Back): ObjstateError {
  return new ObjstateError(CODE_OF[status] ?? "BAD_REQUEST", message, back === undefined ? undefined : { details: { back } });
}

function notFound(frame: Frame, workspace: string): ObjstateError {
  return consoleError(
    404,
    `There is no workspace ${workspace}: it has no state, no lock and no stored version. The Workspaces page lists those that exist.`,
    workspacesLink(frame.base),
  );
}

const forbidden = (ctx: ConsoleContext, workspace: string): ObjstateError => consoleError(403, `You (${ctx.user}) may not read workspace ${workspace}.`);

/** Every answer but the static files': no framing, no sniffing, no caching, the strict policy. */
const SECURITY = {
  "Content-Security-Policy": CONTENT_SECURITY_POLICY,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "same-origin",
  "X-Frame-Options": "DENY",
  "Cache-Control": "no-store",
};

/** Body bytes each response sent, for `onAnswer`. */
const BODY_BYTES = new WeakMap<ServerResponse, number>();

function end(res: ServerResponse, status: number, headers: Record<string, string>, body?: string): void {
  const sent = res.req.method === "HEAD" ? undefined : body;
  res.writeHead(status, headers).end(sent);
  BODY_BYTES.set(res, sent === undefined ? 0 : Buffer.byteLength(sent));
}

function send(res: ServerResponse, status: number, type: string, body: string | SafeHtml, headers?: Record<string, string>): void {
  end(res, status, { ...SECURITY, "Content-Type": `${type}; charset=utf-8`, ...headers }, String(body));
}

function sendStatic(req: IncomingMessage, res: ServerResponse, body: string, type: string, etag: string): void {
  const headers = { "X-Content-Type-Options": "nosniff", ETag: etag, "Cache-Control": "no-cache" };
  if (req.headers["if-none-match"] === etag) end(res, 304, headers);
  else end(res, 200, { ...headers, "Content-Type": type }, body);
}

async function readForm(req: IncomingMessage, ctx: ConsoleContext): Promise<URLSearchParams> {
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") throw consoleError(415, FORM_ONLY);
  try {
    return new URLSearchParams((await readBody(req, { maxBytes: MAX_FORM_BYTES, idleMs: ctx.clientTimeoutMs ?? 30_000 })).bytes().toString("utf8"));
  } catch (e) {
    if (!isObjstateError(e, "BODY_TOO_LARGE")) throw e;
    throw consoleError(413, `The form is larger than the console takes (${MAX_FORM_BYTES / 1024} KiB, for three short fields): nothing was done.`);
  }
}

/** Answer a console request: false when the path is not the console's (nothing written), else true once answered and told to `ctx.onAnswer`. */
export async function handleConsole(req: IncomingMessage, res: ServerResponse, ctx: ConsoleContext): Promise<boolean> {
  const url = new URL(req.url ?? "/", "http://console.invalid");
  const path = mounted(ctx.base ?? "", url.pathname);
  const page = path === undefined ? undefined : PAGES.find("GET", path);
  if (path === undefined || typeof page !== "object") return false;
  const route = page.route.path;
  try {
    await answer(req, res, ctx, url, route, page.raw["workspace"] ?? "", PAGES.methods(path));
  } finally {
    ctx.onAnswer?.({ route, bytes: BODY_BYTES.get(res) ?? 0, routine: route === LOCKS_PATH });
  }
  return true;
}

/** `methods`: those routed to `path`. */
async function answer(req: IncomingMessage, res: ServerResponse, ctx: ConsoleContext, url: URL, path: string, raw: string, methods: string[]): Promise<void> {
  const base = ctx.base ?? "";
  const method = req.method ?? "GET";
  const allow = methods.join(", ");
  const notAllowed = (): void => send(res, 405, "text/plain", `Method not allowed: use ${allow}.\n`, { Allow: allow });
  if ((path === CSS_PATH || path === JS_PATH) && !methods.includes(method)) return notAllowed();
  if (path === CSS_PATH) return sendStatic(req, res, CSS, "text/css; charset=utf-8", CSS_ETAG);
  if (path === JS_PATH) return sendStatic(req, res, JS, "text/javascript; charset=utf-8", JS_ETAG);
  const frame: Frame = { base, user: ctx.user, now: Date.now(), csrf: ctx.csrf.issue(ctx.user), pollMs: ctx.pollMs };
  const sub = path.startsWith(WORKSPACE) ? path.slice(WORKSPACE.length) : "";
  const action = sub === "/rollback" || sub === "/force-unlock" ? (sub.slice(1) as Action) : undefined;
  try {
    if (ctx.refusal !== undefined) {
      if (action !== undefined) ctx.log({ user: ctx.user, action, workspace: safeDecode(raw), outcome: "refused", detail: ctx.refusal.reason });
      throw consoleError(ctx.refusal.status, ctx.refusal.status === 415 ? FORM_ONLY : CROSS_SITE);
    }
    if (!methods.includes(method)) return notAllowed();
    if (path === LOCKS_PATH) return await sendLocks(res, ctx, url.searchParams.get("ws"), frame.now);
    if (path === "/") {
      const all = (await ctx.api.listWorkspaces()).filter((w) => canSee(ctx, w.name));
      const q = url.searchParams.get("q") ?? "";
      return send(res, 200, "text/html", renderWorkspaces({ frame, rows: sortByLastWrite(filterWorkspaces(all, q)), query: q, total: all.length }));
    }
    const workspace = safeDecode(raw, true);
    if (action !== undefined && method === "POST") await handleAction(req, res, ctx, frame, workspace, action);
    else await workspaceRoute(res, ctx, frame, workspace, sub, url.searchParams);
  } catch (e) {
    const status = statusOf(e);
    if (status === 500 && !isObjstateError(e)) ctx.onError?.(e);
    const message = isObjstateError(e) ? (ctx.shown?.(e) ?? e.message) : "The console could not answer: an internal error (see the server's log).";
    const back =
      (isObjstateError(e) ? (e.details?.["back"] as Back | undefined) : undefined) ??
      backFrom(base, url, req.headers.referer, ctx.origin ?? requestOrigin(req));
    // A body left unread is not read at all: the connection closes after this answer.
    if (res.headersSent) return void res.destroy();
    if (!req.complete) res.setHeader("Connection", "close");
    const title = status === 403 ? "Not allowed" : status === 404 ? "Not found" : "Could not do that";
    send(res, status, "text/html", renderMessage({ frame, title, message, tone: "bad", back }));
  }
}

/** `strict`: a name that is not valid percent-encoding is a 400 (else it is shown as it is). */
function safeDecode(text: string, strict = false): string {
  try {
    return decodeURIComponent(text);
  } catch {
    if (strict) throw consoleError(400, "The workspace name in the URL is not valid percent-encoding.");
    return text;
  }
}

/** In lists, its lock and its Workspace page (outputs masked); `read` is asked too, for a `can` that does not know it implies `outputs`. */
const canSee = (ctx: ConsoleContext, workspace: string): boolean => ctx.can("outputs", workspace) || ctx.can("read", workspace);
const canRollback = (ctx: ConsoleContext, workspace: string): boolean => ctx.can("write", workspace) && ctx.can("lock", workspace);

/** A workspace's page or sub-page (`sub`: "" or `/history`, `/diff`, `/rollback`, `/force-unlock`), read with GET. */
async function workspaceRoute(res: ServerResponse, ctx: ConsoleContext, frame: Frame, workspace: string, sub: string, params: URLSearchParams): Promise<void> {
  // The Workspace page shows an outputs-only user its outputs; the rest reads the state.
  if (!(sub === "" ? canSee(ctx, workspace) : ctx.can("read", workspace))) throw forbidden(ctx, workspace);
  if (sub === "") return workspacePage(res, ctx, frame, workspace, params);
  if (sub === "/force-unlock") return forceUnlockConfirmation(res, ctx, frame, workspace, params.get("id"));
  if (sub === "/rollback") return rollbackConfirmation(res, ctx, frame, workspace, params.get("to"));
  const from = params.get("from") || undefined;
  const to = params.get("to") || undefined;
  // An envelope without its key is shown as such, not as a failure.
  if (sub === "/diff" && from !== undefined && to !== undefined)
    return send(res, 200, "text/html", renderDiff({ frame, workspace, from, to, diff: await ctx.api.diff(workspace, from, to).catch(encryptedOr) }));
  // The History page, or the Diff page's form to pick two versions: the newest HISTORY_PAGE, one more to know whether to offer the rest.
  const all = sub === "/history" && params.get("all") === "1";
  const shown = all ? HISTORY_LIMIT : HISTORY_PAGE;
  const found = (await ctx.api.hasHistory()) ? await ctx.api.history(workspace, { limit: all ? HISTORY_LIMIT : HISTORY_PAGE + 1 }) : null;
  if ((found === null || found.length === 0) && !(await ctx.api.exists(workspace))) throw notFound(frame, workspace);
  const versions = found?.slice(0, shown) ?? null;
  const more = !all && found !== null && found.length > shown ? `${workspaceUrl(frame.base, workspace, "/history")}${query({ all: "1" })}` : undefined;
  if (sub === "/diff") return send(res, 200, "text/html", renderDiffPicker({ frame, workspace, versions, from, to, more }));
  const notice = doneMessage(params.get("done"));
  send(res, 200, "text/html", renderHistory({ frame, workspace, versions, canRollback: canRollback(ctx, workspace), notice, more, moreLimit: HISTORY_LIMIT }));
}

async function sendLocks(res: ServerResponse, ctx: ConsoleContext, one: string | null, now: number): Promise<void> {
  if (one !== null && !canSee(ctx, one)) throw forbidden(ctx, one);
  const entries: (readonly [string, LockView | null])[] =
    one !== null ? [[one, await ctx.api.lock(one)]] : [...(await ctx.api.locks())].filter(([w]) => canSee(ctx, w));
  // fromEntries defines own properties: a workspace named __proto__ stays a plain key.
  const locks = Object.fromEntries(entries.map(([w, l]) => [w, l === null ? null : { id: l.id, text: lockText(l, now) }]));
  send(res, 200, "application/json", JSON.stringify({ locks }));
}

async function workspacePage(res: ServerResponse, ctx: ConsoleContext, frame: Frame, workspace: string, params: URLSearchParams): Promise<void> {
  const revealed = params.get("reveal") === "1";
  const canReveal = ctx.can("admin", workspace);
  const canReadVersions = ctx.can("read", workspace);
  if (revealed && !canReveal) {
    ctx.log({ user: ctx.user, action: "reveal", workspace, outcome: "refused", detail: "needs admin" });
    throw consoleError(403, `Revealing sensitive outputs needs the admin role on ${workspace}.`);
  }
  const [summary, outputs, versions] = await Promise.all([
    ctx.api.workspace(workspace),
    ctx.api.outputs(workspace),
    canReadVersions ? ctx.api.hasHistory().then((keeps) => (keeps ? ctx.api.history(workspace, { limit: TIMELINE_LIMIT }) : null)) : null,
  ]);
  // What was read already says whether it exists (as `exists` decides), except for a name with nothing at all.
  const seen = workspace === DEFAULT_WORKSPACE || summary.lastWrite !== null || summary.lock !== null || (versions?.length ?? 0) > 0;
  if (!seen && !(await ctx.api.exists(workspace))) throw notFound(frame, workspace);
  if (revealed) ctx.log({ user: ctx.user, action: "reveal", workspace, outcome: "ok", detail: "sensitive outputs shown" });
  const page = renderWorkspace({
    frame,
    summary,
    outputs: outputs === ENCRYPTED ? outputs : outputs.map((o) => (o.sensitive && !revealed ? { ...o, value: SENSITIVE } : o)),
    revealed,
    canReveal,
    canForceUnlock: ctx.can("force", workspace),
    canRollback: canRollback(ctx, workspace),
    versions: canReadVersions ? versions : "hidden",
    notice: doneMessage(params.get("done")),
  });
  send(res, 200, "text/html", page);
}

async function rollbackConfirmation(res: ServerResponse, ctx: ConsoleContext, frame: Frame, workspace: string, to: string | null): Promise<void> {
  if (!canRollback(ctx, workspace)) throw consoleError(403, `Rolling back needs the write and lock roles on ${workspace}.`);
  if (!to) throw consoleError(400, "Pick the version to roll back to (`to`).");
  const off = "This store keeps no versions (bucket versioning is off): there is nothing to roll back to. Turn it on with `objstate init --versioning`.";
  if (!(await ctx.api.hasHistory())) throw consoleError(404, off);
  // The current version and the target (known from the History page the user came from, else searched for).
  const [latest, found] = await Promise.all([ctx.api.history(workspace, { limit: 1 }), ctx.api.version(workspace, to, { limit: HISTORY_LIMIT })]);
  const current = latest.find((v) => v.isLatest && !v.deleteMarker);
  const target = found === null ? undefined : { ...found, isLatest: found.versionId === current?.versionId };
  if (target === undefined || target.deleteMarker)
    throw consoleError(404, `Version ${to} of ${workspace} is not among its last ${HISTORY_LIMIT} versions (or is a deletion).`);
  if (current === undefined) throw consoleError(409, `${workspace} has no current state to roll back from.`);
  if (current.versionId === target.versionId) throw consoleError(409, `Version ${to} is already the current state of ${workspace}.`);
  const diff = await ctx.api.diff(workspace, current.versionId, target.versionId).catch(encryptedOr);
  // An envelope keeps its serial (docs/decisions/070); whether the target is one is known only once its resources were counted.
  const keepsSerial = target.resources === ENCRYPTED;
  const unknown = (diff === ENCRYPTED && target.resources === undefined) || current.serial === null;
  const newSerial = keepsSerial ? target.serial : unknown ? null : (current.serial as number) + 1;
  send(res, 200, "text/html", renderRollback({ frame, workspace, target, current, diff, newSerial, keepsSerial }));
}

async function forceUnlockConfirmation(res: ServerResponse, ctx: ConsoleContext, frame: Frame, workspace: string, shown: string | null): Promise<void> {
  if (!ctx.can("force", workspace)) throw consoleError(403, `Force-unlock needs the force role on ${workspace}.`);
  const lock = await ctx.api.lock(workspace);
  if (lock === null) {
    if (!(await ctx.api.exists(workspace))) throw notFound(frame, workspace);
    const more = shown === null ? "" : " any more";
    throw consoleError(409, `${workspace} is not locked${more}: there is nothing to force-unlock.`, workspaceLink(frame.base, workspace));
  }
  send(res, 200, "text/html", renderForceUnlock({ frame, workspace, lock, changedFrom: shown !== null && shown !== lock.id ? shown : undefined }));
}

async function handleAction(req: IncomingMessage, res: ServerResponse, ctx: ConsoleContext, frame: Frame, workspace: string, action: Action): Promise<void> {
  const log = (outcome: ConsoleLogEntry["outcome"], detail: string, audit: Partial<ConsoleLogEntry> = {}): Promise<unknown> | void =>
    ctx.log({ user: ctx.user, action, workspace, outcome, detail, ...audit });
  const refuse = (status: number, why: string, message: string, back?: Back): never => {
    log("refused", why);
    throw consoleError(status, message, back);
  };
  const cross = crossSiteReason(req.headers, ctx.origin ?? requestOrigin(req));
  if (cross !== undefined) refuse(403, `cross-site: ${cross}`, CROSS_SITE);
  const form = await readForm(req, ctx);
  if (!ctx.csrf.verify(ctx.user, form.get("csrf")))
    refuse(403, "missing or invalid CSRF token", "Refused: the form's token is missing or has expired. Reload the page and try again.");
  if (action === "force-unlock") {
    if (!ctx.can("force", workspace)) refuse(403, "needs force", `Force-unlock needs the force role on ${workspace}.`);
    const id = form.get("id") ?? "";
    if (id === "") refuse(400, "no lock ID", "The form has no lock ID to release.");
    // Typed out, as GitHub asks before a destructive action: a click alone releases nothing.
    if (form.get("confirm") !== workspace)
      refuse(400, "workspace name not confirmed", `To force-unlock, type the workspace's name, ${workspace}, exactly: nothing was released.`, {
        href: `${workspaceUrl(frame.base, workspace, "/force-unlock")}${query({ id })}`,
        label: "Review the lock and confirm again",
      });
    try {
      await ctx.api.forceUnlock(workspace, id);
    } catch (e) {
      log("failed", `lock ${id}: ${isObjstateError(e) ? e.code : "error"}`, { lockId: id, code: isObjstateError(e) ? e.code : "INTERNAL" });
      // The library checks the ID: a lock released or taken since is never broken by this form.
      if (isObjstateError(e, "LOCK_ID_MISMATCH") || isObjstateError(e, "LOCK_NOT_FOUND")) {
        const gone = `The lock you confirmed (ID ${id}) is no longer the one on ${workspace}: it was released or taken again since. Nothing was released.`;
        throw consoleError(409, gone, { href: workspaceUrl(frame.base, workspace), label: `See ${workspace}'s lock now` });
      }
      throw e;
    }
    await log("ok", `lock ${id}`, { lockId: id });
    return redirect(res, `${workspaceUrl(frame.base, workspace)}?done=force-unlock`);
  }
  if (!canRollback(ctx, workspace)) refuse(403, "needs write and lock", `Rolling back needs the write and lock roles on ${workspace}.`);
  const to = form.get("to") ?? "";
  const seen = form.get("current") ?? "";
  if (to === "" || seen === "") refuse(400, "no version", "The form names no version to roll back to.");
  // A write since the confirmation makes the diff it showed stale: ask again rather than apply something nobody saw.
  const latest = (await ctx.api.history(workspace, { limit: 1 })).find((v) => v.isLatest);
  if (latest?.versionId !== seen) refuse(409, "state changed since confirmation", `${workspace} was written since you confirmed: review the rollback again.`);
  try {
    // Checked again by the library under the lock: a write between this check and the lock is refused too.
    const result = await ctx.api.rollback(workspace, to, { principal: ctx.principal, expectCurrent: seen });
    await log("ok", `to version ${to}, wrote serial ${result.serial}`, { from: to, serial: result.serial, md5: result.md5 });
  } catch (e) {
    log("failed", `to version ${to}: ${isObjstateError(e) ? e.code : "error"}`, { from: to, code: isObjstateError(e) ? e.code : "INTERNAL" });
    throw e;
  }
  redirect(res, `${workspaceUrl(frame.base, workspace, "/history")}?done=rollback`);
}

/** 303: the browser follows with a GET, so a reload does not post the action again. */
function redirect(res: ServerResponse, location: string): void {
  send(res, 303, "text/plain", `See ${location}\n`, { Location: location });
}
