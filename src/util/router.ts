/**
 * Routes by method and path pattern (`:name` segments are parameters), tried in order: the one
 * router of `objstate serve`'s state and API routes and of its console's pages.
 */

export interface RoutePattern {
  readonly method: string;
  readonly path: string;
}

/** A route found for a request, with its parameters as they are in the path (percent-encoded). */
export interface Found<R> {
  readonly route: R;
  readonly raw: Readonly<Record<string, string>>;
}

export class Router<R extends RoutePattern> {
  /** Paths split once, not on every request. */
  private readonly routes: readonly { readonly route: R; readonly parts: readonly string[] }[];

  constructor(routes: readonly R[]) {
    this.routes = routes.map((route) => ({ route, parts: route.path.split("/") }));
  }

  /**
   * The route for `method` on `path`; "method" when only other methods are routed there;
   * undefined for none. With `decoded`, a route matches only when its parameters decode.
   */
  find(method: string, path: string, decoded = false): Found<R> | "method" | undefined {
    let other = false;
    const segments = path.split("/");
    for (const { route, parts } of this.routes) {
      const raw = matchPath(parts, segments);
      if (raw === undefined || (decoded && decodeParams(raw) === undefined)) continue;
      if (route.method === method) return { route, raw };
      other = true;
    }
    return other ? "method" : undefined;
  }

  /** The methods routed on `path`, in the order of the routes. */
  methods(path: string): string[] {
    const segments = path.split("/");
    return [...new Set(this.routes.filter(({ parts }) => matchPath(parts, segments) !== undefined).map(({ route }) => route.method))];
  }
}

/** The parameters of a split path under a pattern's segments; undefined when it does not match. */
function matchPath(parts: readonly string[], segments: readonly string[]): Record<string, string> | undefined {
  if (parts.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const want = parts[i] as string;
    const got = segments[i] as string;
    if (want.startsWith(":")) {
      if (got === "") return undefined;
      params[want.slice(1)] = got;
    } else if (want !== got) return undefined;
  }
  return params;
}

/** Undefined when one is not valid percent-encoding. */
export function decodeParams(raw: Readonly<Record<string, string>>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  try {
    for (const [k, v] of Object.entries(raw)) out[k] = decodeURIComponent(v);
  } catch {
    return undefined;
  }
  return out;
}
