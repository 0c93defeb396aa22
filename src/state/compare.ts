/** Which top-level attributes of two resource instance objects differ: named, never printed, so a sensitive one is never shown. */
import { decimalForm, fromJs, JsonNumber, type ExactJson, type JsonValue } from "../json/exact-json.js";
import type { Attributes } from "./document.js";

/** Two number literals denote the same value (`1.0` and `1`, `1e2` and `100`). */
function sameNumber(a: JsonNumber, b: JsonNumber): boolean {
  if (a.text === b.text) return true;
  const x = decimalForm(a.text);
  return x !== undefined && x === decimalForm(b.text);
}

/** Deep equality of exact JSON values: numbers by value as written, member order ignored. */
export function exactEqual(a: ExactJson, b: ExactJson): boolean {
  const stack: [ExactJson, ExactJson][] = [[a, b]];
  while (stack.length > 0) {
    const [x, y] = stack.pop() as [ExactJson, ExactJson];
    if (x === y) continue;
    if (x instanceof JsonNumber || y instanceof JsonNumber) {
      if (!(x instanceof JsonNumber && y instanceof JsonNumber && sameNumber(x, y))) return false;
    } else if (x instanceof Map || y instanceof Map) {
      if (!(x instanceof Map && y instanceof Map) || x.size !== y.size) return false;
      for (const [k, v] of x) {
        if (!y.has(k)) return false;
        stack.push([v, y.get(k) as ExactJson]);
      }
    } else if (Array.isArray(x) && Array.isArray(y)) {
      const xs = x as readonly ExactJson[];
      const ys = y as readonly ExactJson[];
      if (xs.length !== ys.length) return false;
      for (let i = 0; i < xs.length; i++) stack.push([xs[i] as ExactJson, ys[i] as ExactJson]);
    } else return false;
  }
  return true;
}

/** Deep equality of two JSON values as a caller holds them (member order ignored, an undefined member is none). */
function jsonEqual(a: unknown, b: unknown): boolean {
  return a === b || exactEqual(fromJs(a as JsonValue), fromJs(b as JsonValue));
}

/** Flatmap entries grouped by top-level attribute name (`tags.%` → `tags`). */
function groupFlat(values: Readonly<Record<string, unknown>>): Map<string, Map<string, unknown>> {
  const groups = new Map<string, Map<string, unknown>>();
  for (const [k, v] of Object.entries(values)) {
    const name = k.split(".", 1)[0] as string;
    let g = groups.get(name);
    if (g === undefined) groups.set(name, (g = new Map()));
    g.set(k, v);
  }
  return groups;
}

/**
 * JSON attributes as the older formats' flatmap (`list.#`, `map.%`, scalars as strings, no
 * nulls), to compare a state with one upgraded from it (sets, keyed by hash there, cannot be).
 */
function flatten(values: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const stack: [string, unknown][] = Object.entries(values).reverse();
  while (stack.length > 0) {
    const [k, v] = stack.pop() as [string, unknown];
    if (v === null || v === undefined) continue;
    if (Array.isArray(v)) {
      out[`${k}.#`] = String(v.length);
      for (let i = v.length - 1; i >= 0; i--) stack.push([`${k}.${i}`, v[i]]);
    } else if (typeof v === "object") {
      const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
      out[`${k}.%`] = String(entries.length);
      for (const [ck, cv] of entries.reverse()) stack.push([`${k}.${ck}`, cv]);
    } else {
      out[k] = String(v);
    }
  }
  return out;
}

/** Names of the top-level attributes whose value or sensitivity differs, sorted. */
export function changedAttributes(a: Attributes, b: Attributes, sensitiveA: ReadonlySet<string>, sensitiveB: ReadonlySet<string>): string[] {
  const changed = new Set<string>();
  if (a.kind === "json" && b.kind === "json") {
    const names = new Set([...Object.keys(a.values), ...Object.keys(b.values)]);
    for (const n of names) if (!jsonEqual(a.values[n] ?? null, b.values[n] ?? null)) changed.add(n);
  } else {
    const ga = groupFlat(a.kind === "flat" ? a.values : flatten(a.values));
    const gb = groupFlat(b.kind === "flat" ? b.values : flatten(b.values));
    for (const n of new Set([...ga.keys(), ...gb.keys()])) {
      const x = ga.get(n) ?? new Map<string, unknown>();
      const y = gb.get(n) ?? new Map<string, unknown>();
      if (x.size !== y.size || [...x].some(([k, v]) => !y.has(k) || !jsonEqual(v, y.get(k)))) changed.add(n);
    }
  }
  for (const n of sensitiveA) if (!sensitiveB.has(n)) changed.add(n);
  for (const n of sensitiveB) if (!sensitiveA.has(n)) changed.add(n);
  return [...changed].sort();
}
