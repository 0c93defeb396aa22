/** Terminal output: colours where allowed, warnings, JSON for machines, a progress line on stderr for long transfers, tables. */
import { printable } from "../util/printable.js";

/** The part of a stream the CLI needs (process.stdout / process.stderr, or a test double). */
export interface OutStream {
  write(text: string | Uint8Array): boolean;
  readonly isTTY?: boolean | undefined;
  readonly columns?: number | undefined;
}

/** Set by `--no-color` before the command runs: no colours, whatever the environment says. */
let noColorFlag = false;

export function disableColors(): void {
  noColorFlag = true;
}

/** Are ANSI colours allowed on this stream? `--no-color`, then FORCE_COLOR, then NO_COLOR and TERM=dumb, else a terminal (docs/decisions/024). */
export function colorsAllowed(stream: OutStream, env: NodeJS.ProcessEnv = process.env): boolean {
  if (noColorFlag) return false;
  const force = env["FORCE_COLOR"];
  if (force !== undefined) return force !== "0" && force.toLowerCase() !== "false";
  const noColor = env["NO_COLOR"];
  if (noColor !== undefined && noColor !== "") return false;
  if (env["TERM"] === "dumb") return false;
  return stream.isTTY === true;
}

type Paint = Readonly<Record<"green" | "red" | "yellow" | "dim" | "bold", (s: string) => string>>;

const ansi = (open: number, close: number) => (s: string) => `\u001b[${open}m${s}\u001b[${close}m`;
const plain = (s: string): string => s;

/** Colour functions for a stream: identity functions when colours are not allowed. */
export function paint(stream: OutStream, env: NodeJS.ProcessEnv = process.env): Paint {
  if (!colorsAllowed(stream, env)) return { green: plain, red: plain, yellow: plain, dim: plain, bold: plain };
  return { green: ansi(32, 39), red: ansi(31, 39), yellow: ansi(33, 39), dim: ansi(2, 22), bold: ansi(1, 22) };
}

const warned = new Set<string>();

/** Print a warning on stderr (`objstate: warning: …`), once per code. */
export function warn(message: string, code = message): void {
  if (warned.has(code)) return;
  warned.add(code);
  process.stderr.write(`${paint(process.stderr).yellow("objstate: warning:")} ${printable(message)}\n`);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** `1.5 MiB`, `512 B`. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const i = Math.min(3, Math.floor(Math.log2(n) / 10) - 1);
  return `${(n / 1024 ** (i + 1)).toFixed(1)} ${["KiB", "MiB", "GiB", "TiB"][i] as string}`;
}

/** Transfers at or above this size get a progress line (when stderr is a TTY). */
const PROGRESS_MIN_BYTES = 4 * 1024 * 1024;
const FRAMES = ["|", "/", "-", "\\"];
const BAR_WIDTH = 24;

/** A one-line progress display on a TTY (nothing elsewhere): a bar once bytes are reported, else a spinner; redrawn with `\r` and erased with spaces, never ANSI codes. Always call `done()`. */
export class Progress {
  private readonly started = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private sent: number | undefined;
  /** The size learnt during the transfer, when it was not known at the start. */
  private lateTotal: number | undefined;
  private lastWidth = 0;

  private constructor(
    private readonly stream: OutStream,
    private readonly label: string,
    private readonly total: number | undefined,
  ) {}

  /** On a TTY, for a big transfer or one of unknown size (shown only after `delayMs`, so quick ones stay silent). */
  static start(stream: OutStream, label: string, total: number | undefined, options: { delayMs?: number; intervalMs?: number } = {}): Progress {
    const p = new Progress(stream, label, total);
    if (stream.isTTY !== true) return p;
    if (total !== undefined && total < PROGRESS_MIN_BYTES) return p;
    const delay = options.delayMs ?? (total === undefined ? 500 : 0);
    const tick = (): void => p.render();
    p.timer = setTimeout(() => {
      tick();
      p.timer = setInterval(tick, options.intervalMs ?? 100);
      p.timer.unref();
    }, delay);
    p.timer.unref();
    return p;
  }

  /** Run `work` with a progress line on `stream`, erased when it ends. */
  static async during<T>(stream: OutStream, label: string, total: number | undefined, work: (p: Progress) => Promise<T>): Promise<T> {
    const p = Progress.start(stream, label, total);
    try {
      return await work(p);
    } finally {
      p.done();
    }
  }

  /** Bytes moved so far, and the total once it is known (a download's). */
  update(sent: number, total?: number): void {
    this.sent = sent;
    if (this.total === undefined && total !== undefined) this.lateTotal = total;
  }

  /** The line as it would be drawn now. */
  line(): string {
    const elapsed = ((Date.now() - this.started) / 1000).toFixed(1);
    const spin = FRAMES[this.frame % FRAMES.length] as string;
    const total = this.total ?? this.lateTotal;
    if (total !== undefined && this.sent !== undefined && total > 0) {
      const frac = Math.min(1, this.sent / total);
      const full = Math.round(frac * BAR_WIDTH);
      const bar = `[${"#".repeat(full)}${" ".repeat(BAR_WIDTH - full)}]`;
      return `${this.label} ${bar} ${formatBytes(this.sent)} / ${formatBytes(total)} ${elapsed}s`;
    }
    if (this.sent !== undefined) return `${this.label} ${formatBytes(this.sent)} ${spin} ${elapsed}s`;
    const size = this.total === undefined ? "" : ` ${formatBytes(this.total)}`;
    return `${this.label}${size} ${spin} ${elapsed}s`;
  }

  private render(): void {
    this.frame++;
    const text = this.line().slice(0, Math.max(20, (this.stream.columns || 80) - 1));
    this.stream.write(`\r${text.padEnd(this.lastWidth)}`);
    this.lastWidth = text.length;
  }

  /** Stop and erase the line. */
  done(): void {
    // clearTimeout stops an interval too.
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.lastWidth > 0) this.stream.write(`\r${" ".repeat(this.lastWidth)}\r`);
    this.lastWidth = 0;
  }
}

/** Rows in columns two spaces apart. */
export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  // The last column is free text: not padded.
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
