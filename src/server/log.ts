/** One JSON line per request on stderr (or any sink), of fields chosen here: never a header, query string, body or password. */

export type LogLevel = "debug" | "info" | "warn" | "error" | "off";
export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error", "off"];
const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3, off: 4 };

export class Logger {
  constructor(
    private readonly level: LogLevel = "info",
    private readonly sink: (line: string) => void = (line) => process.stderr.write(line),
  ) {}

  /** A request: `info` (`debug` when `routine`, such as the console's lock poll), `warn` for 4xx, `error` for 5xx. */
  request(r: { readonly status: number } & Record<string, string | number | undefined>, routine = false): void {
    const level: LogLevel = r.status >= 500 ? "error" : r.status >= 400 ? "warn" : routine ? "debug" : "info";
    this.write(level, { msg: "request", ...r });
  }

  event(level: LogLevel, msg: string, fields: Record<string, string | number | boolean | undefined> = {}): void {
    this.write(level, { msg, ...fields });
  }

  private write(level: LogLevel, fields: object): void {
    if (RANK[level] < RANK[this.level] || this.level === "off") return;
    this.sink(`${JSON.stringify({ time: new Date().toISOString(), level, ...fields })}\n`);
  }
}
