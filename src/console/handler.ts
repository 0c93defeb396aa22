/**
 * `handleConsole(req, res, ctx)`: the console's routes, for a node:http server to mount.
 * Reads go through `ctx.api`, actions too; this module only checks who may do what, builds
 * the pages' view models and answers. Returns false for paths that are not the console's,
 * so the server can route them elsewhere.
 *
 * Routes (under `ctx.base`): `GET /` (Workspaces), `GET /workspaces/{w}` (`?reveal=1` for
 * admins), `GET …/history`, `GET …/diff?from=&to=` (without both, a form to pick them),
 * `GET …/rollback?to=` and `GET …/force-unlock?id=` (confirmations), `POST …/rollback`,
 * `POST …/force-unlock`, and the static `GET /console/console.css`, `/console/live.js` and
 * the live script's `GET /console/locks[?ws=]`. A page of a workspace that does not exist
 * (no state, lock or version, and not `default`) is a 404.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { DEFAULT_WORKSPACE } from "../config/layout.js";
import { isObjstateError, ObjstateError, statusOf, type ErrorCode } from "../errors.js";
import { readBody } from "../io/http-body.js";
import { Router, type Found, type RoutePattern } from "../util/router.js";
import { SENSITIVE } from "../state/diff.js";
import { CONTENT_SECURITY_POLICY, CSS, CSS_ETAG, CSS_PATH, JS, JS_ETAG, JS_PATH, LOCKS_PATH } from "./assets.js";
import { backFrom, workspacesLink, type Back } from "./back.js";
import type { SafeHtml } from "./html.js";
import { query, workspaceUrl, type Frame } from "./layout.js";
import { lockText } from "./lock-text.js";
import { crossSiteReason, requestOrigin } from "./origin.js";
import { renderDiff, renderDiffPicker } from "./pages/diff.js";
import { renderForceUnlock } from "./pages/force-unlock.js";
import { renderHistory } from "./pages/history.js";
import { renderMessage } from "./pages/message.js";
import { renderRollback } from "./pages/rollback.js";
import { renderWorkspace } from "./pages/workspace.js";
import { filterWorkspaces, renderWorkspaces, sortByLastWrite } from "./pages/workspaces.js";
import { ENCRYPTED, encryptedOr, type ConsoleContext, type ConsoleLogEntry, type LockView, type VersionView } from "./types.js";

/** Versions the History page lists with `?all=1` (and the rollback confirmation searches). */
export const HISTORY_LIMIT = 1000;
/** Versions the History page lists at first (each is a ranged read of the store). */
export const HISTORY_PAGE = 100;
/** Versions the Workspace page's timeline shows. */
export const TIMELINE_LIMIT = 10;
/** Largest form body accepted (a form has three short fields). */
const MAX_FORM_BYTES = 16 * 1024;

/** Messages after an action's redirect: fixed texts, so nothing from the URL is echoed. */
const DONE: Readonly<Record<string, string>> = {
  "force-unlock": "The lock was released.",
  rollback: "Rolled back: the new version is at the top of the history.",
};

/** The fixed message for `?done=`, or undefined (never a lookup through the prototype). */
function doneMessage(done: string | null): string | undefined {
  return done !== null && Object.hasOwn(DONE, done) ? DONE[done] : undefined;
}

/** The code of each status the console refuses with: its pages' errors go through the one table (errors.ts) too. */
const CODE_OF: Readonly<Record<number, ErrorCode>> = {
  400: "BAD_REQUEST",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  409: "STATE_CONFLICT",
  413: "BODY_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  421: "MISDIRECTED_REQUEST",
};

/** A refusal of the console's, with its page's message and where the page sends the user next (default: back where they came from). */
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

function securityHeaders(res: ServerResponse): void {
  res.setHeader("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "same-origin");
  res.setHeader("X-Frame-Options", "DENY");
  res.setHeader("Cache-Control", "no-store");
}

/** Response body bytes each console response sent (read once it is answered). */
const BODY_BYTES = new WeakMap<ServerResponse, number>();

/** End a response, counting its body (none goes out for HEAD). */
function end(res: ServerResponse, body?: string): void {
  res.end(body);
  BODY_BYTES.set(res, body === undefined || res.req.method === "HEAD" ? 0 : Buffer.byteLength(body));
}

function sendPage(res: ServerResponse, status: number, page: SafeHtml): void {
  securityHeaders(res);
  res.writeHead(status, { "Content-Type": "text/html; charset=utf-8" });
  end(res, page.value);
}

function sendStatic(req: IncomingMessage, res: ServerResponse, body: string, type: string, etag: string): void {
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("ETag", etag);
  res.setHeader("Cache-Control", "no-cache");
  if (req.headers["if-none-match"] === etag) {
    end(res.writeHead(304));
    return;
  }
  res.writeHead(200, { "Content-Type": type });
  end(res, req.method === "HEAD" ? undefined : body);
}

/** A urlencoded form body, at most {@link MAX_FORM_BYTES}, read by the server's one body reader. */
async function readForm(req: IncomingMessage, ctx: ConsoleContext): Promise<URLSearchParams> {
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") throw consoleError(415, "The console's actions take a form (application/x-www-form-urlencoded).");
  const limits = { maxBytes: MAX_FORM_BYTES, idleMs: ctx.clientTimeoutMs ?? 30_000, maxBytesName: "the most a console form takes" };
  return new URLSearchParams((await readBody(req, limits)).bytes().toString("utf8"));
}

function lockJson(lock: LockView | null, now: number): { id: string; text: string } | null {
  return lock === null ? null : { id: lock.id, text: lockText(lock, now) };
}

/** A workspace's pages: its own, then the sub-pages (the last two are actions, posted). */
const WORKSPACE = "/workspaces/:workspace";
const WORKSPACE_PAGES = ["", "/history", "/diff", "/rollback", "/force-unlock"];

/** The console's routes: GET and HEAD on every page, POST on the two actions (the server's router). */
const PAGES = new Router(
  [...["/", CSS_PATH, JS_PATH, LOCKS_PATH], ...WORKSPACE_PAGES.map((sub) => WORKSPACE + sub)].flatMap((path) =>
    ["GET", "HEAD", ...(path.endsWith("/rollback") || path.endsWith("/force-unlock") ? ["POST"] : [])].map((method) => ({ method, path })),
  ),
);

/**
 * Answer a console request. Returns false when the path is not the console's (nothing
 * was written to `res`); true once it answered, errors included, after telling
 * `ctx.onAnswer` the route and the bytes sent.
 */
export async function handleConsole(req: IncomingMessage, res: ServerResponse, ctx: ConsoleContext): Promise<boolean> {
  const base = ctx.base ?? "";
  const url = new URL(req.url ?? "/", "http://console.invalid");
  let path = url.pathname;
  if (base !== "") {
    if (path === base) path = "/";
    else if (path.startsWith(`${base}/`)) path = path.slice(base.length);
    else return false;
  }
  const page = PAGES.find("GET", path);
  if (typeof page !== "object") return false;
  const route = page.route.path;
  try {
    await answer(req, res, ctx, url, page, PAGES.methods(path).join(", "));
  } finally {
    ctx.onAnswer?.({ route, bytes: BODY_BYTES.get(res) ?? 0, routine: route === LOCKS_PATH });
  }
  return true;
}

/** Answer a request for a console page (`allow`: the methods routed there). */
async function answer(req: IncomingMessage, res: ServerResponse, ctx: ConsoleContext, url: URL, page: Found<RoutePattern>, allow: string): Promise<void> {
  const path = page.route.path;
  const base = ctx.base ?? "";
  const method = req.method ?? "GET";
  const get = method === "GET" || method === "HEAD";
  const frame: Frame = { base, user: ctx.user, now: Date.now(), csrf: ctx.csrf.issue(ctx.user), pollMs: ctx.pollMs };

  if (path === CSS_PATH || path === JS_PATH) {
    if (!get) return methodNotAllowed(res, allow);
    if (path === CSS_PATH) sendStatic(req, res, CSS, "text/css; charset=utf-8", CSS_ETAG);
    else sendStatic(req, res, JS, "text/javascript; charset=utf-8", JS_ETAG);
    return;
  }
  const raw = page.raw["workspace"] ?? "";
  const sub = path.startsWith(WORKSPACE) ? path.slice(WORKSPACE.length) : "";

  try {
    const refusal = ctx.refusal;
    if (refusal !== undefined) {
      const action = sub === "/rollback" ? "rollback" : sub === "/force-unlock" ? "force-unlock" : undefined;
      if (action !== undefined) ctx.log({ user: ctx.user, action, workspace: safeDecode(raw), outcome: "refused", detail: refusal.reason });
      throw consoleError(
        refusal.status,
        refusal.status === 415
          ? "The console's actions take a form (application/x-www-form-urlencoded)."
          : "Refused: this action must be posted from the console's own page.",
      );
    }
    if (path === LOCKS_PATH) {
      if (!get) return methodNotAllowed(res, allow);
      await sendLocks(res, ctx, url.searchParams.get("ws"), frame.now);
      return;
    }
    if (path === "/") {
      if (!get) return methodNotAllowed(res, allow);
      const all = (await ctx.api.listWorkspaces()).filter((w) => canSee(ctx, w.name));
      const q = url.searchParams.get("q") ?? "";
      sendPage(res, 200, renderWorkspaces({ frame, rows: sortByLastWrite(filterWorkspaces(all, q)), query: q, total: all.length }));
      return;
    }
    let workspace: string;
    try {
      workspace = decodeURIComponent(raw);
    } catch {
      throw consoleError(400, "The workspace name in the URL is not valid percent-encoding.");
    }
    const acts = sub === "/rollback" || sub === "/force-unlock";
    if (acts && method === "POST") {
      await handleAction(req, res, ctx, frame, workspace, sub === "/rollback" ? "rollback" : "force-unlock");
      return;
    }
    if (!get) return methodNotAllowed(res, allow);
    await workspaceRoute(res, ctx, frame, workspace, sub, url.searchParams);
  } catch (e) {
    const status = statusOf(e);
    if (status === 500 && !isObjstateError(e)) ctx.onError?.(e);
    const message = isObjstateError(e) ? (ctx.shown?.(e) ?? e.message) : "The console could not answer: an internal error (see the server's log).";
    const back =
      (isObjstateError(e) ? (e.details?.["back"] as Back | undefined) : undefined) ??
      backFrom(base, url, req.headers.referer, ctx.origin ?? requestOrigin(req));
    // A body left unread is not read at all: the connection closes after this answer.
    if (!req.complete && !res.headersSent) res.setHeader("Connection", "close");
    if (!res.headersSent)
      sendPage(
        res,
        status,
        renderMessage({ frame, title: status === 403 ? "Not allowed" : status === 404 ? "Not found" : "Could not do that", message, tone: "bad", back }),
      );
    else res.destroy();
  }
}

/** A workspace's page or sub-page (`sub`: "" or `/history`, `/diff`, `/rollback`, `/force-unlock`), read with GET. */
async function workspaceRoute(res: ServerResponse, ctx: ConsoleContext, frame: Frame, workspace: string, sub: string, params: URLSearchParams): Promise<void> {
  // The Workspace page shows an outputs-only user its outputs; the rest reads the state.
  if (!(sub === "" ? canSee(ctx, workspace) : ctx.can("read", workspace))) throw consoleError(403, `You (${ctx.user}) may not read workspace ${workspace}.`);
  if (sub === "") await workspacePage(res, ctx, frame, workspace, params);
  else if (sub === "/history") {
    // The newest HISTORY_PAGE at first, one more read to know whether to offer the rest.
    const all = params.get("all") === "1";
    const shown = all ? HISTORY_LIMIT : HISTORY_PAGE;
    const found = await versionsOf(ctx, frame, workspace, all ? HISTORY_LIMIT : HISTORY_PAGE + 1);
    const versions = found?.slice(0, shown) ?? null;
    const more = !all && found !== null && found.length > shown ? `${workspaceUrl(frame.base, workspace, "/history")}${query({ all: "1" })}` : undefined;
    const done = params.get("done");
    sendPage(
      res,
      200,
      renderHistory({ frame, workspace, versions, canRollback: canRollback(ctx, workspace), notice: doneMessage(done), more, moreLimit: HISTORY_LIMIT }),
    );
  } else if (sub === "/diff") {
    const from = params.get("from") || undefined;
    const to = params.get("to") || undefined;
    if (from !== undefined && to !== undefined) {
      // An envelope without its key is shown as such, not as a failure.
      const diff = await ctx.api.diff(workspace, from, to).catch(encryptedOr);
      sendPage(res, 200, renderDiff({ frame, workspace, from, to, diff }));
    } else {
      // Not both sides: a form to pick them (a link to the Diff page is not a bad request).
      const found = await versionsOf(ctx, frame, workspace, HISTORY_PAGE + 1);
      const more = found !== null && found.length > HISTORY_PAGE ? `${workspaceUrl(frame.base, workspace, "/history")}${query({ all: "1" })}` : undefined;
      sendPage(res, 200, renderDiffPicker({ frame, workspace, versions: found?.slice(0, HISTORY_PAGE) ?? null, from, to, more }));
    }
  } else if (sub === "/force-unlock") await forceUnlockConfirmation(res, ctx, frame, workspace, params.get("id"));
  else await rollbackConfirmation(res, ctx, frame, workspace, params.get("to"));
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function methodNotAllowed(res: ServerResponse, allow: string): void {
  securityHeaders(res);
  end(res.writeHead(405, { Allow: allow, "Content-Type": "text/plain; charset=utf-8" }), `Method not allowed: use ${allow}.\n`);
}

/**
 * May the user see the workspace in lists, its lock and its Workspace page (outputs
 * masked)? `read` is asked too, for a host whose `can` does not know that it implies `outputs`.
 */
function canSee(ctx: ConsoleContext, workspace: string): boolean {
  return ctx.can("outputs", workspace) || ctx.can("read", workspace);
}

function canRollback(ctx: ConsoleContext, workspace: string): boolean {
  return ctx.can("write", workspace) && ctx.can("lock", workspace);
}

async function sendLocks(res: ServerResponse, ctx: ConsoleContext, one: string | null, now: number): Promise<void> {
  let entries: [string, LockView | null][];
  if (one !== null) {
    if (!canSee(ctx, one)) throw consoleError(403, `You (${ctx.user}) may not read workspace ${one}.`);
    entries = [[one, await ctx.api.lock(one)]];
  } else {
    entries = [...(await ctx.api.locks())].filter(([w]) => canSee(ctx, w));
  }
  // fromEntries defines own properties: a workspace named __proto__ stays a plain key.
  const body = JSON.stringify({ locks: Object.fromEntries(entries.map(([w, l]) => [w, lockJson(l, now)])) });
  securityHeaders(res);
  end(res.writeHead(200, { "Content-Type": "application/json; charset=utf-8" }), body);
}

/**
 * Up to `limit` versions, newest first (null when the store keeps none); a 404 when there
 * are none and the workspace does not exist.
 */
async function versionsOf(ctx: ConsoleContext, frame: Frame, workspace: string, limit: number): Promise<VersionView[] | null> {
  const found = (await ctx.api.hasHistory()) ? await ctx.api.history(workspace, { limit }) : null;
  if ((found === null || found.length === 0) && !(await ctx.api.exists(workspace))) throw notFound(frame, workspace);
  return found;
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
  const done = params.get("done");
  const page = renderWorkspace({
    frame,
    summary,
    outputs: outputs === ENCRYPTED ? outputs : outputs.map((o) => (o.sensitive && !revealed ? { ...o, value: SENSITIVE } : o)),
    revealed,
    canReveal,
    canForceUnlock: ctx.can("force", workspace),
    canRollback: canRollback(ctx, workspace),
    versions: canReadVersions ? versions : "hidden",
    notice: doneMessage(done),
  });
  sendPage(res, 200, page);
}

async function rollbackConfirmation(res: ServerResponse, ctx: ConsoleContext, frame: Frame, workspace: string, to: string | null): Promise<void> {
  if (!canRollback(ctx, workspace)) throw consoleError(403, `Rolling back needs the write and lock roles on ${workspace}.`);
  if (!to) throw consoleError(400, "Pick the version to roll back to (`to`).");
  if (!(await ctx.api.hasHistory()))
    throw consoleError(
      404,
      "This store keeps no versions (bucket versioning is off): there is nothing to roll back to. Turn it on with `objstate init --versioning`.",
    );
  // The two versions looked up, not found in a list of a thousand: the current one, and the
  // target (known from the History page the user came from, else searched for).
  const [latest, found] = await Promise.all([ctx.api.history(workspace, { limit: 1 }), ctx.api.version(workspace, to, { limit: HISTORY_LIMIT })]);
  const current = latest.find((v) => v.isLatest && !v.deleteMarker);
  const target = found === null ? undefined : { ...found, isLatest: found.versionId === current?.versionId };
  if (target === undefined || target.deleteMarker)
    throw consoleError(404, `Version ${to} of ${workspace} is not among its last ${HISTORY_LIMIT} versions (or is a deletion).`);
  if (current === undefined) throw consoleError(409, `${workspace} has no current state to roll back from.`);
  if (current.versionId === target.versionId) throw consoleError(409, `Version ${to} is already the current state of ${workspace}.`);
  const diff = await ctx.api.diff(workspace, current.versionId, target.versionId).catch(encryptedOr);
  // An envelope is restored as it is, keeping its serial (docs/decisions/070); whether the
  // target is one is known when its resources were counted, else the serial is not promised.
  const newSerial =
    target.resources === ENCRYPTED
      ? target.serial
      : diff === ENCRYPTED && target.resources === undefined
        ? null
        : current.serial === null
          ? null
          : current.serial + 1;
  sendPage(res, 200, renderRollback({ frame, workspace, target, current, diff, newSerial, keepsSerial: target.resources === ENCRYPTED }));
}

async function forceUnlockConfirmation(res: ServerResponse, ctx: ConsoleContext, frame: Frame, workspace: string, shown: string | null): Promise<void> {
  if (!ctx.can("force", workspace)) throw consoleError(403, `Force-unlock needs the force role on ${workspace}.`);
  const lock = await ctx.api.lock(workspace);
  if (lock === null) {
    if (!(await ctx.api.exists(workspace))) throw notFound(frame, workspace);
    throw consoleError(409, `${workspace} is not locked${shown === null ? "" : " any more"}: there is nothing to force-unlock.`, {
      href: workspaceUrl(frame.base, workspace),
      label: `Back to ${workspace}`,
    });
  }
  sendPage(res, 200, renderForceUnlock({ frame, workspace, lock, changedFrom: shown !== null && shown !== lock.id ? shown : undefined }));
}

async function handleAction(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: ConsoleContext,
  frame: Frame,
  workspace: string,
  action: "force-unlock" | "rollback",
): Promise<void> {
  const log = (outcome: ConsoleLogEntry["outcome"], detail: string, audit: Partial<ConsoleLogEntry> = {}): Promise<unknown> | void =>
    ctx.log({ user: ctx.user, action, workspace, outcome, detail, ...audit });
  const refuse = (status: number, why: string, message: string): never => {
    log("refused", why);
    throw consoleError(status, message);
  };
  const cross = crossSiteReason(req.headers, ctx.origin ?? requestOrigin(req));
  if (cross !== undefined) refuse(403, `cross-site: ${cross}`, "Refused: this action must be posted from the console's own page.");
  const form = await readForm(req, ctx);
  if (!ctx.csrf.verify(ctx.user, form.get("csrf")))
    refuse(403, "missing or invalid CSRF token", "Refused: the form's token is missing or has expired. Reload the page and try again.");
  if (action === "force-unlock") {
    if (!ctx.can("force", workspace)) refuse(403, "needs force", `Force-unlock needs the force role on ${workspace}.`);
    const id = form.get("id");
    if (!id) refuse(400, "no lock ID", "The form has no lock ID to release.");
    const review = {
      href: `${workspaceUrl(frame.base, workspace, "/force-unlock")}${query({ id: id as string })}`,
      label: "Review the lock and confirm again",
    };
    // Typed out, as GitHub asks before a destructive action: a click alone releases nothing.
    if (form.get("confirm") !== workspace) {
      log("refused", "workspace name not confirmed");
      throw consoleError(400, `To force-unlock, type the workspace's name, ${workspace}, exactly: nothing was released.`, review);
    }
    try {
      await ctx.api.forceUnlock(workspace, id as string);
    } catch (e) {
      log("failed", `lock ${id}: ${isObjstateError(e) ? e.code : "error"}`, { lockId: id as string, code: isObjstateError(e) ? e.code : "INTERNAL" });
      // The ID is checked by the library: a lock released or taken since is never broken by this form.
      if (isObjstateError(e, "LOCK_ID_MISMATCH") || isObjstateError(e, "LOCK_NOT_FOUND")) {
        throw consoleError(
          409,
          `The lock you confirmed (ID ${id}) is no longer the one on ${workspace}: it was released or taken again since. Nothing was released.`,
          { href: workspaceUrl(frame.base, workspace), label: `See ${workspace}'s lock now` },
        );
      }
      throw e;
    }
    await log("ok", `lock ${id}`, { lockId: id as string });
    redirect(res, `${workspaceUrl(frame.base, workspace)}?done=force-unlock`);
    return;
  }
  if (!canRollback(ctx, workspace)) refuse(403, "needs write and lock", `Rolling back needs the write and lock roles on ${workspace}.`);
  const to = form.get("to");
  const seen = form.get("current");
  if (!to || !seen) refuse(400, "no version", "The form names no version to roll back to.");
  // The confirmation showed a diff from one current version; if another write came since,
  // that diff is stale: ask again rather than apply something nobody saw.
  const latest = (await ctx.api.history(workspace, { limit: 1 })).find((v) => v.isLatest);
  if (latest?.versionId !== seen) refuse(409, "state changed since confirmation", `${workspace} was written since you confirmed: review the rollback again.`);
  try {
    // Checked again by the library under the lock: a write between this check and the lock is refused too.
    const result = await ctx.api.rollback(workspace, to as string, { principal: ctx.principal, expectCurrent: seen as string });
    await log("ok", `to version ${to}, wrote serial ${result.serial ?? "?"}`, { from: to as string, serial: result.serial ?? undefined, md5: result.md5 });
  } catch (e) {
    log("failed", `to version ${to}: ${isObjstateError(e) ? e.code : "error"}`, { from: to as string, code: isObjstateError(e) ? e.code : "INTERNAL" });
    throw e;
  }
  redirect(res, `${workspaceUrl(frame.base, workspace, "/history")}?done=rollback`);
}

function redirect(res: ServerResponse, location: string): void {
  securityHeaders(res);
  // 303: the browser follows with a GET, so a reload does not post the action again.
  end(res.writeHead(303, { Location: location, "Content-Type": "text/plain; charset=utf-8" }), `See ${location}\n`);
}
