/** The Prometheus text exposition format (version 0.0.4): metric families, label sets, values. */

/** A metric's label set. */
export type Labels = Readonly<Record<string, string>>;

/** `{k="v",…}` with values escaped as the format asks (backslash, quote, newline); "" for none. */
export function labels(l: Labels): string {
  const parts = Object.entries(l).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

/** A sample value: numbers as JavaScript prints them, the infinities and NaN as Prometheus spells them. */
function value(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Infinity) return "+Inf";
  if (n === -Infinity) return "-Inf";
  return String(n);
}

/** Collects one exposition: each family's HELP and TYPE lines, then its samples. */
export class Exposition {
  private readonly lines: string[] = [];

  /** Start a family. */
  family(name: string, type: "counter" | "gauge" | "histogram", help: string): this {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    return this;
  }

  /** One sample of the current family (`name` carries a histogram's `_bucket`/`_sum`/`_count`). */
  sample(name: string, l: Labels, n: number): this {
    this.lines.push(`${name}${labels(l)} ${value(n)}`);
    return this;
  }

  /** A histogram's samples: cumulative buckets (`le`), `+Inf`, sum and count. */
  histogram(name: string, l: Labels, buckets: readonly number[], cumulative: readonly number[], sum: number, count: number): this {
    buckets.forEach((b, i) => this.sample(`${name}_bucket`, { ...l, le: String(b) }, cumulative[i] ?? 0));
    return this.sample(`${name}_bucket`, { ...l, le: "+Inf" }, count)
      .sample(`${name}_sum`, l, sum)
      .sample(`${name}_count`, l, count);
  }

  /** The text, ending in a newline. */
  text(): string {
    return this.lines.length === 0 ? "" : `${this.lines.join("\n")}\n`;
  }
}
