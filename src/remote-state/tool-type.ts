/**
 * The tool's type notation (`"string"`, `["list","string"]`, …) for an output whose state
 * recorded none: a default, or an output of a format 1-3 state. Nothing here recurses (values
 * may nest 10,000 levels deep), and equal types share an interned id, so time is linear in size.
 */
import { rebuild, type ExactJson, type Opened } from "../json/exact-json.js";

interface TypeNode {
  readonly id: number;
  readonly json: ExactJson;
}

interface Typed {
  readonly implied: TypeNode;
  readonly simplified: TypeNode;
}

/**
 * The type the tool implies from a value (`cty/json.ImpliedType`): null is `"dynamic"`, a list a
 * `["tuple",[…]]`, an object an `["object",{…}]` (names sorted). `upgraded`: as the tool's
 * upgrade of a format 1-3 state types it, a non-empty tuple or object whose parts all have one
 * type is a `["list",T]` or `["map",T]`, level by level while that holds.
 */
export function impliedToolType(value: ExactJson, upgraded: boolean): ExactJson {
  const interned = new Map<string, TypeNode>();
  const intern = (key: string, json: ExactJson): TypeNode => {
    let node = interned.get(key);
    if (node === undefined) {
      node = { id: interned.size, json };
      interned.set(key, node);
    }
    return node;
  };
  // Containers are opened, never leaves.
  const leaf = (v: ExactJson): Typed => {
    const name = v === null ? "dynamic" : typeof v === "string" ? "string" : typeof v === "boolean" ? "bool" : "number";
    const node = intern(name, name);
    return { implied: node, simplified: node };
  };
  const combine = (names: readonly string[] | undefined, kids: readonly [unknown, Typed][]): Typed => {
    const parts = kids.map(([, t]) => t);
    const ids = parts.map((p) => p.implied.id).join(",");
    const implied =
      names === undefined
        ? intern(`tuple[${ids}]`, ["tuple", parts.map((p) => p.implied.json)])
        : intern(`object{${names.map((n, i) => `${JSON.stringify(n)}:${(parts[i] as Typed).implied.id}`).join(",")}}`, [
            "object",
            new Map(names.map((n, i) => [n, (parts[i] as Typed).implied.json])),
          ]);
    const first = parts[0];
    if (first === undefined || !parts.every((p) => p.implied.id === first.implied.id)) return { implied, simplified: implied };
    const kind = names === undefined ? "list" : "map";
    return { implied, simplified: intern(`${kind}(${first.simplified.id})`, [kind, first.simplified.json]) };
  };
  const pick = (t: Typed): ExactJson => (upgraded ? t.simplified.json : t.implied.json);
  const open = (v: ExactJson): Opened<ExactJson, Typed> | undefined => {
    if (Array.isArray(v)) return { entries: (v as readonly ExactJson[]).map((x) => [undefined, x]), make: (kids) => combine(undefined, kids) };
    if (!(v instanceof Map)) return undefined;
    const names = [...v.keys()].sort();
    return { entries: names.map((n) => [n, v.get(n) as ExactJson]), make: (kids) => combine(names, kids) };
  };
  return pick(rebuild(value, open, leaf));
}
