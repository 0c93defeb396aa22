/**
 * Counters of one server process in the Prometheus text format (`/metrics`): requests by
 * route and status, a latency histogram per route, lock waits, bytes in and out, and the
 * locks taken through this process that it has not seen released.
 */

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

function labels(l: Record<string, string>): string {
  const parts = Object.entries(l).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

export class Metrics {
  private readonly requests = new Map<string, { l: Record<string, string>; n: number }>();
  private readonly latency = new Map<string, { counts: number[]; sum: number; n: number }>();
  private lockWaits = 0;
  private bytesIn = 0;
  private bytesOut = 0;
  private locksHeld = 0;

  /** Count one answered request. */
  request(route: string, method: string, status: number, seconds: number, bytesIn: number, bytesOut: number): void {
    // Counted on every request: a plain key, and the objects made only for a new one.
    const key = `${route} ${method} ${status}`;
    let r = this.requests.get(key);
    if (r === undefined) this.requests.set(key, (r = { l: { route, method, status: String(status) }, n: 0 }));
    r.n += 1;
    let h = this.latency.get(route);
    if (h === undefined) this.latency.set(route, (h = { counts: BUCKETS.map(() => 0), sum: 0, n: 0 }));
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= (BUCKETS[i] as number)) h.counts[i] = (h.counts[i] as number) + 1;
    h.sum += seconds;
    h.n += 1;
    this.bytesIn += bytesIn;
    this.bytesOut += bytesOut;
  }

  /** A LOCK found the state held by someone else (the client will wait and retry). */
  lockWait(): void {
    this.lockWaits += 1;
  }

  /** A lock was taken (+1) or released (-1) through this process. */
  lockHeld(delta: 1 | -1): void {
    this.locksHeld = Math.max(0, this.locksHeld + delta);
  }

  /** The Prometheus text exposition. */
  text(): string {
    const out: string[] = [];
    out.push("# HELP objstate_http_requests_total Requests answered, by route, method and status.", "# TYPE objstate_http_requests_total counter");
    for (const r of this.requests.values()) out.push(`objstate_http_requests_total${labels(r.l)} ${r.n}`);
    out.push("# HELP objstate_http_request_duration_seconds Time to answer a request, by route.", "# TYPE objstate_http_request_duration_seconds histogram");
    for (const [route, h] of this.latency) {
      BUCKETS.forEach((b, i) => out.push(`objstate_http_request_duration_seconds_bucket${labels({ route, le: String(b) })} ${h.counts[i] as number}`));
      out.push(`objstate_http_request_duration_seconds_bucket${labels({ route, le: "+Inf" })} ${h.n}`);
      out.push(`objstate_http_request_duration_seconds_sum${labels({ route })} ${h.sum}`, `objstate_http_request_duration_seconds_count${labels({ route })} ${h.n}`);
    }
    out.push("# HELP objstate_lock_waits_total LOCK requests answered 423 (held by another client).", "# TYPE objstate_lock_waits_total counter", `objstate_lock_waits_total ${this.lockWaits}`);
    out.push("# HELP objstate_http_bytes_in_total Request body bytes read.", "# TYPE objstate_http_bytes_in_total counter", `objstate_http_bytes_in_total ${this.bytesIn}`);
    out.push("# HELP objstate_http_bytes_out_total Response body bytes sent.", "# TYPE objstate_http_bytes_out_total counter", `objstate_http_bytes_out_total ${this.bytesOut}`);
    out.push(
      "# HELP objstate_locks_active Locks taken through this process and not (yet) released through it.",
      "# TYPE objstate_locks_active gauge",
      `objstate_locks_active ${this.locksHeld}`,
    );
    return `${out.join("\n")}\n`;
  }
}
