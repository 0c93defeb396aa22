/** `/metrics` with prom-client: objstate's own per server, then the default `process_*` and `nodejs_*` ones, once per process. */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type GaugeConfiguration } from "prom-client";
import { objstateVersion } from "../version.js";

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The format's content type as served (the format's version, without a charset). */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4";

let processRegistry: Registry | undefined;

/** The default metrics' registry: their observers are process-wide, so there is one for every server. */
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export class Metrics {
  private readonly registry = new Registry();
  private readonly registers = [this.registry];
  private readonly requests = this.counter("objstate_http_requests_total", "Requests answered, by route, method and status.", ["route", "method", "status"]);
  private readonly duration = new Histogram({
    name: "objstate_http_request_duration_seconds",
    help: "Time to answer a request, by route.",
    labelNames: ["route"],
    buckets: BUCKETS,
    registers: this.registers,
  });
  private readonly bytesIn = this.counter("objstate_http_request_bytes_total", "Request body bytes read, by route.", ["route"]);
  private readonly bytesOut = this.counter("objstate_http_response_bytes_total", "Response body bytes sent, by route.", ["route"]);
  readonly lockWaits = this.counter("objstate_lock_waits_total", "LOCK requests answered 423 (held by another client).");
  private readonly locks = this.gauge("objstate_locks_active", "Locks taken through this process and not (yet) released through it.");
  private locksHeld = 0;
  // Audit names kept from the appended day objects (decision 076) so dashboards go on working.
  readonly auditFailures = this.counter("objstate_audit_append_failures_total", "Audit event writes that failed and were retried.");
  readonly auditSpilled = this.counter(
    "objstate_audit_lines_logged_total",
    "Audit events written to the server's log because the store did not take them in time.",
  );
  /** Audit events being stored now (set by the server that keeps one). */
  auditPending: () => number = () => 0;

  constructor() {
    const pending = (): number => this.auditPending();
    this.gauge("objstate_audit_lines_pending", "Audit events being stored.", {
      collect() {
        this.set(pending());
      },
    });
    const build = this.gauge("objstate_build_info", "The objstate version and the Node.js version it runs on (value 1).", { labelNames: ["version", "node"] });
    build.set({ version: objstateVersion(), node: process.version }, 1);
    processMetrics();
  }

  private counter(name: string, help: string, labelNames: string[] = []): Counter {
    return new Counter({ name, help, labelNames, registers: this.registers });
  }

  private gauge(name: string, help: string, more: Partial<GaugeConfiguration<string>> = {}): Gauge {
    return new Gauge({ name, help, registers: this.registers, ...more });
  }

  request(route: string, method: string, status: number, seconds: number, bytesIn: number, bytesOut: number): void {
    this.requests.inc({ route, method, status: String(status) });
    this.duration.observe({ route }, seconds);
    this.bytesIn.inc({ route }, bytesIn);
    this.bytesOut.inc({ route }, bytesOut);
  }

  lockHeld(delta: 1 | -1): void {
    this.locksHeld = Math.max(0, this.locksHeld + delta);
    this.locks.set(this.locksHeld);
  }

  async text(): Promise<string> {
    return (await this.registry.metrics()) + "\n" + (await processMetrics().metrics());
  }
}
