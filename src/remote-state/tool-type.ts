/**
 * The tool's type notation for an output value it did not record a type for: a default,
 * or an output of a state of format 1 to 3 (which kept only "string", "list" or "map").
 *
 * The tool's `output -json` prints every output's type in its JSON type notation (`"string"`,
 * `["list","string"]`, `["object",{"a":"number"}]`). A format-4 state records that type
 * beside each value; for the others the tool implies one from the value, as here.
 *
 * Nothing here recurses (values may nest 10,000 levels deep), and equal types are compared by
 * an interned id, so a deep value costs time linear in its size.
 */
import { JsonNumber, type ExactJson } from "../json/exact-json.js";

/** A type, interned: equal types have the same id. */
interface TypeNode {
  readonly id: number;
  readonly json: ExactJson;
}

/** The implied type of a value, and what the state upgrade makes of it. */
interface Typed {
  readonly implied: TypeNode;
  readonly simplified: TypeNode;
}

/**
 * The type the tool implies from a JSON value (`cty/json.ImpliedType`): a string is
 * `"string"`, a number `"number"`, a boolean `"bool"`, null `"dynamic"`, a list a
 * `["tuple",[…]]` of its elements' types and an object an `["object",{…}]` of its
 * members' types (names sorted, as the tool writes them).
 *
 * `upgraded`: as the tool's upgrade of a format 1–3 state types an output — a non-empty
 * tuple whose elements all have one type is a `["list",T]` and a non-empty object whose
 * members all have one type a `["map",T]`, level by level while that holds.
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
    let name: string;
    if (v === null) name = "dynamic";
    else if (typeof v === "string") name = "string";
    else if (typeof v === "boolean") name = "bool";
    else if (v instanceof JsonNumber) name = "number";
    else return undefined;
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
    // The upgrade turns a tuple or object whose parts are all of one (implied) type into a
    // collection of that part's simplified type; otherwise it leaves the whole type as implied.
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
