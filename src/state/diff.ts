/** `diffStates(a, b)`: the resource instances and root outputs added, removed and changed between two states, and its rendering. */
import { stringifyDeep, toJs, type JsonValue } from "../json/exact-json.js";
import { printable as safe } from "../util/printable.js";
import { compareAddresses, compareText } from "./address.js";
import { changedAttributes, exactEqual } from "./compare.js";
import { readStateDocument, type StateDocument, type StateInput, type StateOutput } from "./document.js";

export type { StateInput } from "./document.js";

/** A resource instance address as the tool prints it, e.g. `module.net.aws_subnet.a["x"]`. */
export type Address = string;

/** What {@link formatStateDiff} and `--json` show for a sensitive value. */
export const SENSITIVE = "<sensitive>";

/** An instance present on both sides whose attributes differ. */
export interface ResourceChange {
  readonly address: Address;
  /** Top-level attribute names whose value (or sensitivity) differs; never their values. */
  readonly attributes: string[];
}

/** An output present on one side only. */
export interface OutputEntry {
  readonly name: string;
  /** Or `"<sensitive>"`. */
  readonly value: JsonValue;
  readonly sensitive: boolean;
}

/** An output present on both sides whose value or sensitivity differs. */
export interface OutputChange {
  readonly name: string;
  /** `"<sensitive>"` when the output is sensitive on either side. */
  readonly before: JsonValue;
  readonly after: JsonValue;
  readonly sensitive: boolean;
}

/** The difference from state `a` ("from") to state `b` ("to"); plain JSON, every list sorted. */
export interface StateDiff {
  readonly resources: { readonly added: Address[]; readonly removed: Address[]; readonly changed: ResourceChange[] };
  readonly outputs: { readonly added: OutputEntry[]; readonly removed: OutputEntry[]; readonly changed: OutputChange[] };
  readonly serial: { readonly before: number | null; readonly after: number | null };
  readonly lineage: { readonly before: string | null; readonly after: string | null };
}

/**
 * Compare two states (formats 1–4), each its bytes, its text, the parsed document, or null (or
 * empty) for none. Outputs given as bytes or text compare with numbers as written.
 * @throws ObjstateError `STATE_INVALID` naming the side (`the 'from' state …`)
 */
export function diffStates(a: StateInput, b: StateInput): StateDiff {
  const from = readStateDocument(a, "from");
  const to = readStateDocument(b, "to");
  return {
    resources: diffResources(from, to),
    outputs: diffOutputs(from?.outputs ?? new Map(), to?.outputs ?? new Map()),
    serial: { before: from?.serial ?? null, after: to?.serial ?? null },
    lineage: { before: from?.lineage ?? null, after: to?.lineage ?? null },
  };
}

/** No resource or output changed (serial and lineage are not looked at). */
export function isEmptyStateDiff(d: StateDiff): boolean {
  const r = d.resources;
  const o = d.outputs;
  return r.added.length + r.removed.length + r.changed.length + o.added.length + o.removed.length + o.changed.length === 0;
}

function diffResources(from: StateDocument | null, to: StateDocument | null): StateDiff["resources"] {
  const a = from?.instances ?? new Map();
  const b = to?.instances ?? new Map();
  const order = (x: string, y: string): number => compareAddresses((a.get(x) ?? b.get(x)).address, (a.get(y) ?? b.get(y)).address);
  const removed: string[] = [];
  const changed: ResourceChange[] = [];
  for (const [address, x] of a) {
    const y = b.get(address);
    const attributes = y === undefined ? [] : changedAttributes(x.attributes, y.attributes, x.sensitive, y.sensitive);
    if (y === undefined) removed.push(address);
    else if (attributes.length > 0) changed.push({ address, attributes });
  }
  return {
    added: [...b.keys()].filter((addr) => !a.has(addr)).sort(order),
    removed: removed.sort(order),
    changed: changed.sort((x, y) => order(x.address, y.address)),
  };
}

const byName = (x: { name: string }, y: { name: string }): number => compareText(x.name, y.name);

function diffOutputs(a: ReadonlyMap<string, StateOutput>, b: ReadonlyMap<string, StateOutput>): StateDiff["outputs"] {
  // "lossless": a number a JS number cannot hold exactly stays its literal text.
  const plain = (o: StateOutput): JsonValue => toJs(o.exact, "lossless", false);
  const shown = (o: StateOutput): JsonValue => (o.sensitive ? SENSITIVE : plain(o));
  const added: OutputEntry[] = [];
  const removed: OutputEntry[] = [];
  const changed: OutputChange[] = [];
  for (const [name, x] of a) {
    const y = b.get(name);
    if (y === undefined) removed.push({ name, value: shown(x), sensitive: x.sensitive });
    else if (x.sensitive !== y.sensitive || !exactEqual(x.exact, y.exact)) {
      // Sensitive on either side hides both: the plain side would tell what the other holds.
      const sensitive = x.sensitive || y.sensitive;
      changed.push({ name, before: sensitive ? SENSITIVE : plain(x), after: sensitive ? SENSITIVE : plain(y), sensitive });
    }
  }
  for (const [name, y] of b) if (!a.has(name)) added.push({ name, value: shown(y), sensitive: y.sensitive });
  return { added: added.sort(byName), removed: removed.sort(byName), changed: changed.sort(byName) };
}

export interface FormatStateDiffOptions {
  /** ANSI colours (default false). */
  readonly color?: boolean;
  /** Longest value shown before it is cut with an ellipsis (default 80). */
  readonly maxValueLength?: number;
}

function showValue(v: JsonValue, max: number): string {
  if (v === SENSITIVE) return SENSITIVE;
  const text = stringifyDeep(v);
  return safe(text.length <= max ? text : `${text.slice(0, Math.max(1, max - 1))}…`);
}

/** The diff for a terminal: `Resources:` and `Outputs:` (`+`, `-`, `~`) and a summary line, or "No changes". */
export function formatStateDiff(diff: StateDiff, options: FormatStateDiffOptions = {}): string {
  const max = options.maxValueLength ?? 80;
  const paint = (code: string, s: string): string => (options.color === true ? `\u001b[${code}m${s}\u001b[0m` : s);
  const plus = (s: string): string => paint("32", `  + ${s}`);
  const minus = (s: string): string => paint("31", `  - ${s}`);
  const tilde = (s: string): string => paint("33", `  ~ ${s}`);
  const lines: string[] = [];
  const { serial, lineage } = diff;
  if (serial.before !== serial.after) lines.push(`Serial: ${serial.before ?? "none"} → ${serial.after ?? "none"}`);
  if (lineage.before !== lineage.after)
    lines.push(`Lineage: ${safe(lineage.before ?? "none")} → ${safe(lineage.after ?? "none")} (not the same state history)`);
  if (isEmptyStateDiff(diff)) {
    lines.push("No changes: both states have the same resources and outputs.");
    return `${lines.join("\n")}\n`;
  }
  const r = diff.resources;
  if (r.added.length + r.removed.length + r.changed.length > 0) {
    lines.push("Resources:");
    for (const a of r.added) lines.push(plus(safe(a)));
    for (const a of r.removed) lines.push(minus(safe(a)));
    for (const c of r.changed) lines.push(tilde(`${safe(c.address)} (${c.attributes.map(safe).join(", ")})`));
  }
  const o = diff.outputs;
  if (o.added.length + o.removed.length + o.changed.length > 0) {
    lines.push("Outputs:");
    for (const x of o.added) lines.push(plus(`${safe(x.name)} = ${showValue(x.value, max)}`));
    for (const x of o.removed) lines.push(minus(`${safe(x.name)} = ${showValue(x.value, max)}`));
    for (const x of o.changed) lines.push(tilde(`${safe(x.name)}: ${showValue(x.before, max)} → ${showValue(x.after, max)}`));
  }
  lines.push(
    `${r.added.length} added, ${r.changed.length} changed, ${r.removed.length} removed; ` +
      `outputs: ${o.added.length} added, ${o.changed.length} changed, ${o.removed.length} removed`,
  );
  return `${lines.join("\n")}\n`;
}
