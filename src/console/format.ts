/** Small formatters shared by the pages: sizes, times, counts. Pure. */

/** Bytes as `1.2 MiB`. */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return "?";
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** A UTC ISO time as `2026-11-24 00:52 UTC`; the text itself when it is not a time. */
export function formatTime(iso: string | undefined): string {
  if (iso === undefined || iso === "") return "unknown";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return `${new Date(t).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** How long ago (or from now) `iso` is, relative to `now`: `5 min ago`, `in 2 h`. */
export function formatAgo(iso: string | undefined, now: number): string {
  if (iso === undefined || iso === "") return "";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const d = now - t;
  const a = Math.abs(d);
  const text =
    a < 60_000
      ? `${Math.round(a / 1000)} s`
      : a < 3_600_000
        ? `${Math.round(a / 60_000)} min`
        : a < 172_800_000
          ? `${Math.round(a / 3_600_000)} h`
          : `${Math.round(a / 86_400_000)} d`;
  return d >= 0 ? `${text} ago` : `in ${text}`;
}
