/** Resource instance addresses as the tool prints (`module.a["k"].aws_instance.web[0]`) and orders them. */

/** An instance key: none, a count index or a for_each key. */
export type InstanceKey = undefined | number | string;

/** Characters Go's `unicode.IsPrint` rejects: controls, format, private, unassigned, separators other than the space. */
const NOT_PRINTABLE = /^(?:[\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Cn}\p{Zl}\p{Zp}]|(?! )\p{Zs})$/u;

const ESCAPES: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\" };

/** A for_each key as the tool quotes it in HCL: escapes, template introducers (`${`, `%{`) doubled, unprintables as `\uXXXX`. */
export function hclQuoted(s: string): string {
  let out = '"';
  const chars = [...s];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    const escaped = ESCAPES[c];
    if (escaped !== undefined) out += escaped;
    else if (c === "$" || c === "%") out += chars[i + 1] === "{" ? c + c : c;
    else if (NOT_PRINTABLE.test(c)) {
      const cp = c.codePointAt(0) as number;
      out += cp < 0x10000 ? `\\u${cp.toString(16).padStart(4, "0")}` : `\\U${cp.toString(16).padStart(8, "0")}`;
    } else out += c;
  }
  return `${out}"`;
}

/** `[0]`, `["key"]`, or "" for no key. */
function formatKey(key: InstanceKey): string {
  if (key === undefined) return "";
  return typeof key === "number" ? `[${key}]` : `[${hclQuoted(key)}]`;
}

/** One resource instance object's address. */
export interface InstanceAddress {
  /** `module.a["k"].module.b`, "" for the root. */
  readonly module: string;
  readonly mode: "managed" | "data";
  readonly type: string;
  readonly name: string;
  readonly key: InstanceKey;
  /** A deposed object's key (create_before_destroy left it behind). */
  readonly deposed: string | undefined;
}

/** The address as the tool prints it (a deposed object as its plan shows it). */
export function formatAddress(a: InstanceAddress): string {
  const resource = `${a.mode === "data" ? "data." : ""}${a.type}.${a.name}${formatKey(a.key)}`;
  const full = a.module === "" ? resource : `${a.module}.${resource}`;
  return a.deposed === undefined ? full : `${full} (deposed object ${a.deposed})`;
}

function compareKeys(a: InstanceKey, b: InstanceKey): number {
  // The tool's order: no key, then numbers numerically, then strings.
  const rank = (k: InstanceKey): number => (k === undefined ? 0 : typeof k === "number" ? 1 : 2);
  const d = rank(a) - rank(b);
  if (d !== 0) return d;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return compareText(a as string | undefined, b as string | undefined);
}

/** Code-unit order, the same on every machine. */
export function compareText(a: string | undefined, b: string | undefined): number {
  const x = a ?? "";
  const y = b ?? "";
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Root module first, then by module path, managed before data, type, name, key, deposed. */
export function compareAddresses(a: InstanceAddress, b: InstanceAddress): number {
  return (
    compareText(a.module, b.module) ||
    (a.mode === b.mode ? 0 : a.mode === "managed" ? -1 : 1) ||
    compareText(a.type, b.type) ||
    compareText(a.name, b.name) ||
    compareKeys(a.key, b.key) ||
    (a.deposed === b.deposed ? 0 : a.deposed === undefined ? -1 : b.deposed === undefined ? 1 : compareText(a.deposed, b.deposed))
  );
}
