/**
 * Where a console error page sends the user back to: the console page they came from
 * (the `Referer`, when it is one of this console's pages on this origin), else the nearest
 * page above the one that failed. Only console paths are ever linked, so a Referer cannot
 * make the page link elsewhere. Pure.
 */
import { query, workspaceUrl } from "./layout.js";

/** A link back. */
export interface Back {
  readonly href: string;
  readonly label: string;
}

const PAGES: Readonly<Record<string, (workspace: string) => string>> = {
  "": (w) => `Back to ${w}`,
  "/history": (w) => `Back to the history of ${w}`,
  "/diff": (w) => `Back to the diff of ${w}`,
  "/rollback": (w) => `Back to the rollback of ${w}`,
  "/force-unlock": (w) => `Back to the force-unlock of ${w}`,
};

/** The Workspaces page. */
export function workspacesLink(base: string): Back {
  return { href: `${base}/`, label: "Back to workspaces" };
}

/** A console page's path split into workspace and sub-page, or "/" for Workspaces; undefined for any other path. */
function parse(base: string, pathname: string): { workspace: string; sub: string } | "/" | undefined {
  let path = pathname;
  if (base !== "") {
    if (path === base) return "/";
    if (!path.startsWith(`${base}/`)) return undefined;
    path = path.slice(base.length);
  }
  if (path === "/") return "/";
  const m = /^\/workspaces\/([^/]+)(\/(?:history|diff|rollback|force-unlock))?$/.exec(path);
  if (m === null) return undefined;
  try {
    return { workspace: decodeURIComponent(m[1] as string), sub: m[2] ?? "" };
  } catch {
    return undefined;
  }
}

/** A link to the console page `url` (its query kept, but for the one-time `done` notice), or undefined when it is not one. */
export function pageLink(base: string, url: URL): Back | undefined {
  const page = parse(base, url.pathname);
  if (page === undefined) return undefined;
  if (page === "/") return { href: `${base}/${query({ q: url.searchParams.get("q") || undefined })}`, label: "Back to workspaces" };
  const params = new URLSearchParams(url.searchParams);
  params.delete("done");
  const search = params.toString();
  return {
    href: `${workspaceUrl(base, page.workspace, page.sub)}${search === "" ? "" : `?${search}`}`,
    label: (PAGES[page.sub] as (w: string) => string)(page.workspace),
  };
}

/**
 * Where the error page for `failed` links back to: the console page in `referer` when it is
 * on `origin` and is not the failed page itself; else the workspace's page for one of its
 * sub-pages (or for the workspace page asked with a query); else the Workspaces page.
 */
export function backFrom(base: string, failed: URL, referer: string | undefined, origin: string | undefined): Back {
  if (referer !== undefined && referer !== "" && origin !== undefined) {
    let from: URL | undefined;
    try {
      from = new URL(referer);
    } catch {
      from = undefined;
    }
    if (from !== undefined && from.origin.toLowerCase() === origin.toLowerCase() && `${from.pathname}${from.search}` !== `${failed.pathname}${failed.search}`) {
      const link = pageLink(base, from);
      if (link !== undefined) return link;
    }
  }
  const page = parse(base, failed.pathname);
  if (page !== undefined && page !== "/" && (page.sub !== "" || failed.search !== ""))
    return { href: workspaceUrl(base, page.workspace), label: `Back to ${page.workspace}` };
  return workspacesLink(base);
}
