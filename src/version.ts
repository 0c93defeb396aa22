import { nodeFs } from "./util/builtins.js";

let cached: string | undefined;
/** objstate's own version, from package.json (read once, when first asked). */
export function objstateVersion(): string {
  if (cached === undefined) {
    // dist/src/version.js → package.json at the package root
    const pkg = JSON.parse(nodeFs().readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: unknown };
    cached = typeof pkg.version === "string" ? pkg.version : "0.0.0";
  }
  return cached;
}
