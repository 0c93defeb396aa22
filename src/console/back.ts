/** The console's pages, and where an error page links back to (only ever a console path). Pure. */
import { Router } from "../util/router.js";
import { CSS_PATH, JS_PATH, LOCKS_PATH } from "./assets.js";
import { query, workspaceUrl } from "./layout.js";

export interface Back {
  readonly href: string;
  readonly label: string;
}

export const WORKSPACE = "/workspaces/:workspace";

/** A workspace's sub-pages and their back links' labels. */
const SUBS: Readonly<Record<string, string>> = {
  "": "",
  "/history": "the history of ",
  "/diff": "the diff of ",
  "/rollback": "the rollback of ",
  "/force-unlock": "the force-unlock of ",
};

/** The console's routes: GET and HEAD on every page, POST on the two actions. */
export const PAGES = new Router(
  [...["/", CSS_PATH, JS_PATH, LOCKS_PATH], ...Object.keys(SUBS).map((sub) => WORKSPACE + sub)].flatMap((path) =>
    ["GET", "HEAD", ...(path.endsWith("/rollback") || path.endsWith("/force-unlock") ? ["POST"] : [])].map((method) => ({ method, path })),
  ),
);

/** `pathname` below the mount path `base`, or undefined when it is not under it. */
export function mounted(base: string, pathname: string): string | undefined {
  if (base === "" || pathname.startsWith(`${base}/`)) return pathname.slice(base.length);
  return pathname === base ? "/" : undefined;
}

export const workspacesLink = (base: string): Back => ({ href: `${base}/`, label: "Back to workspaces" });
export const workspaceLink = (base: string, workspace: string): Back => ({ href: workspaceUrl(base, workspace), label: `Back to ${workspace}` });

/** A page's path as its workspace and sub-page, or "/" for Workspaces; undefined for any other path. */
function parse(base: string, pathname: string): { workspace: string; sub: string } | "/" | undefined {
  const path = mounted(base, pathname);
  const page = path === undefined ? undefined : PAGES.find("GET", path, true);
  if (typeof page !== "object") return undefined;
  const route = page.route.path;
  if (route === "/") return "/";
  return route.startsWith(WORKSPACE) ? { workspace: decodeURIComponent(page.raw["workspace"] as string), sub: route.slice(WORKSPACE.length) } : undefined;
}

/** A link to the console page `url` (its query kept, but for the one-time `done` notice), or undefined when it is not one. */
export function pageLink(base: string, url: URL): Back | undefined {
  const page = parse(base, url.pathname);
  if (page === undefined) return undefined;
  if (page === "/") return { href: `${base}/${query({ q: url.searchParams.get("q") || undefined })}`, label: "Back to workspaces" };
  const params = new URLSearchParams(url.searchParams);
  params.delete("done");
  const search = params.toString();
  return { href: `${workspaceUrl(base, page.workspace, page.sub)}${search === "" ? "" : `?${search}`}`, label: `Back to ${SUBS[page.sub]}${page.workspace}` };
}

/**
 * The error page's link for `failed`: the console page in `referer` when it is on `origin` and
 * is not the failed page itself; else the workspace's page for one of its sub-pages (or for the
 * workspace page asked with a query); else the Workspaces page.
 */
export function backFrom(base: string, failed: URL, referer: string | undefined, origin: string | undefined): Back {
  const from = referer !== undefined && referer !== "" && origin !== undefined && URL.canParse(referer) ? new URL(referer) : undefined;
  if (from !== undefined && from.origin.toLowerCase() === origin?.toLowerCase() && `${from.pathname}${from.search}` !== `${failed.pathname}${failed.search}`) {
    const link = pageLink(base, from);
    if (link !== undefined) return link;
  }
  const page = parse(base, failed.pathname);
  if (page !== undefined && page !== "/" && (page.sub !== "" || failed.search !== "")) return workspaceLink(base, page.workspace);
  return workspacesLink(base);
}
