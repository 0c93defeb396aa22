/**
 * The tool's type notation (`"string"`, `["list","string"]`, …) for an output whose state
 * recorded none: a default, or an output of a format 1-3 state. Nothing here recurses (values
 * may nest 10,000 levels deep), and equal types share an interned id, so time is linear in size.
 */
import { JsonNumber, type ExactJson } from "../json/exact-json.js";

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
  const leaf = (v: ExactJson): Typed | undefined => {
    const name = v === null ? "dynamic" : typeof v === "string" ? "string" : typeof v === "boolean" ? "bool" : v instanceof JsonNumber ? "number" : undefined;
    if (name === undefined) return undefined;
    const node = intern(name, name);
    return { implied: node, simplified: node };
  };
  const combine = (names: readonly string[] | undefined, parts: readonly Typed[]): Typed => {
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

  type Frame = { readonly names: string[] | undefined; readonly children: ExactJson[]; readonly done: Typed[] };
  const open = (v: ReadonlyMap<string, ExactJson> | readonly ExactJson[]): Frame => {
    if (!(v instanceof Map)) return { names: undefined, children: [...(v as readonly ExactJson[])], done: [] };
    const names = [...v.keys()].sort();
    return { names, children: names.map((n) => v.get(n) as ExactJson), done: [] };
  };
  const pick = (t: Typed): ExactJson => (upgraded ? t.simplified.json : t.implied.json);

  const top = leaf(value);
  if (top !== undefined) return pick(top);
  const stack: Frame[] = [open(value as ReadonlyMap<string, ExactJson> | readonly ExactJson[])];
  for (;;) {
    const f = stack[stack.length - 1] as Frame;
    if (f.done.length === f.children.length) {
      stack.pop();
      const typed = combine(f.names, f.done);
      const parent = stack[stack.length - 1];
      if (parent === undefined) return pick(typed);
      parent.done.push(typed);
      continue;
    }
    const child = f.children[f.done.length] as ExactJson;
    const typed = leaf(child);
    if (typed === undefined) stack.push(open(child as ReadonlyMap<string, ExactJson> | readonly ExactJson[]));
    else f.done.push(typed);
  }
}
