/**
 * Counters of one server process in the Prometheus text format (`/metrics`): requests by
 * route and status, a latency histogram per route, request and response body bytes per
 * route, lock waits, the locks taken through this process that it has not seen released,
 * and the build. Names follow Prometheus's rules: the unit last, `_total` on counters.
 * The process's own metrics (CPU, memory, event loop) are process-metrics.ts.
 */
import { objstateVersion } from "../version.js";
import { Exposition } from "./prometheus.js";

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** What is counted per route. */
interface RouteCounts {
  readonly counts: number[];
  sum: number;
  n: number;
  bytesIn: number;
  bytesOut: number;
}

export class Metrics {
  private readonly requests = new Map<string, { l: Record<string, string>; n: number }>();
  private readonly routes = new Map<string, RouteCounts>();
  private lockWaits = 0;
  private locksHeld = 0;
  private auditFailures = 0;
  private auditSpilled = 0;
  /** Audit events being stored now (set by the server that keeps one). */
  auditPending: () => number = () => 0;

  /** An audit event's write failed (it is retried within the deadline). */
  auditFailure(): void {
    this.auditFailures += 1;
  }

  /** An audit event went to the server's log instead of the store. */
  auditSpill(): void {
    this.auditSpilled += 1;
  }

  /** Count one answered request. */
  request(route: string, method: string, status: number, seconds: number, bytesIn: number, bytesOut: number): void {
    // Counted on every request: a plain key, and the objects made only for a new one.
    const key = `${route} ${method} ${status}`;
    let r = this.requests.get(key);
    if (r === undefined) this.requests.set(key, (r = { l: { route, method, status: String(status) }, n: 0 }));
    r.n += 1;
    let h = this.routes.get(route);
    if (h === undefined) this.routes.set(route, (h = { counts: BUCKETS.map(() => 0), sum: 0, n: 0, bytesIn: 0, bytesOut: 0 }));
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= (BUCKETS[i] as number)) h.counts[i] = (h.counts[i] as number) + 1;
    h.sum += seconds;
    h.n += 1;
    h.bytesIn += bytesIn;
    h.bytesOut += bytesOut;
  }

  /** A LOCK found the state held by someone else (the client will wait and retry). */
  lockWait(): void {
    this.lockWaits += 1;
  }

  /** A lock was taken (+1) or released (-1) through this process. */
  lockHeld(delta: 1 | -1): void {
    this.locksHeld = Math.max(0, this.locksHeld + delta);
  }

  /** The Prometheus text exposition of objstate's own metrics. */
  text(): string {
    const e = new Exposition();
    e.family("objstate_build_info", "gauge", "The objstate version and the Node.js version it runs on (value 1).").sample(
      "objstate_build_info",
      { version: objstateVersion(), node: process.version },
      1,
    );
    e.family("objstate_http_requests_total", "counter", "Requests answered, by route, method and status.");
    for (const r of this.requests.values()) e.sample("objstate_http_requests_total", r.l, r.n);
    e.family("objstate_http_request_duration_seconds", "histogram", "Time to answer a request, by route.");
    for (const [route, h] of this.routes) e.histogram("objstate_http_request_duration_seconds", { route }, BUCKETS, h.counts, h.sum, h.n);
    e.family("objstate_http_request_bytes_total", "counter", "Request body bytes read, by route.");
    for (const [route, h] of this.routes) e.sample("objstate_http_request_bytes_total", { route }, h.bytesIn);
    e.family("objstate_http_response_bytes_total", "counter", "Response body bytes sent, by route.");
    for (const [route, h] of this.routes) e.sample("objstate_http_response_bytes_total", { route }, h.bytesOut);
    e.family("objstate_lock_waits_total", "counter", "LOCK requests answered 423 (held by another client).").sample(
      "objstate_lock_waits_total",
      {},
      this.lockWaits,
    );
    e.family("objstate_locks_active", "gauge", "Locks taken through this process and not (yet) released through it.").sample(
      "objstate_locks_active",
      {},
      this.locksHeld,
    );
    // Names kept from the appended day objects (decision 076) so dashboards go on working.
    e.family("objstate_audit_lines_pending", "gauge", "Audit events being stored.").sample("objstate_audit_lines_pending", {}, this.auditPending());
    e.family("objstate_audit_append_failures_total", "counter", "Audit event writes that failed and were retried.").sample(
      "objstate_audit_append_failures_total",
      {},
      this.auditFailures,
    );
    e.family("objstate_audit_lines_logged_total", "counter", "Audit events written to the server's log because the store did not take them in time.").sample(
      "objstate_audit_lines_logged_total",
      {},
      this.auditSpilled,
    );
    return e.text();
  }
}
