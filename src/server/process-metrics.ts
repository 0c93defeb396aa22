/**
 * The standard `process_*` and `nodejs_*` metrics, under prom-client's default metrics'
 * names, types, help texts and labels (so the usual Node.js dashboards and alerts work),
 * read from node:process, node:v8, node:perf_hooks and Linux's /proc without prom-client.
 * One collector per process: the event-loop and GC observers are process-wide.
 */
import { readdirSync, readFileSync } from "node:fs";
import { constants, monitorEventLoopDelay, PerformanceObserver, type IntervalHistogram } from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";
import { Exposition } from "./prometheus.js";

/** prom-client's buckets for GC pauses. */
const GC_BUCKETS = [0.001, 0.01, 0.1, 1, 2, 5];
const GC_KINDS: Readonly<Record<number, string>> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
};
/** Event-loop delay sampling period, ms (prom-client's default precision). */
const LOOP_RESOLUTION_MS = 10;

/** A `gc` performance entry: its kind is in `detail` (Node 16 on). */
interface GcEntry {
  readonly detail?: { readonly kind?: number } | undefined;
}

/** The undocumented handle and request lists prom-client reads (absent on some runtimes). */
interface LibuvLists {
  _getActiveHandles?: () => unknown[];
  _getActiveRequests?: () => unknown[];
}

/** `VmRSS`, `VmSize`, `VmData` of /proc/self/status in bytes (Linux), or undefined elsewhere. */
function procStatus(): { rss: number; size: number; data: number } | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const text = readFileSync("/proc/self/status", "utf8");
    const get = (field: string): number => Number(new RegExp(`^${field}:\\s*(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN) * 1024;
    return { rss: get("VmRSS"), size: get("VmSize"), data: get("VmData") };
  } catch {
    return undefined;
  }
}

/** The soft limit on open files (/proc/self/limits), or undefined. */
function maxFds(): number | undefined {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max open files"));
    const n = Number(line?.split(/ {2,}/)[1]);
    return Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

/** Open file descriptors (/proc/self/fd, less the one reading it), or undefined. */
function openFds(): number | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    return readdirSync("/proc/self/fd").length - 1;
  } catch {
    return undefined;
  }
}

/** Counts of a list by each element's constructor name (prom-client's `type` label). */
function byConstructor(list: readonly unknown[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const x of list) {
    const name = (x as { constructor?: { name?: unknown } } | null)?.constructor?.name;
    if (typeof name === "string") out.set(name, (out.get(name) ?? 0) + 1);
  }
  return out;
}

function countOf(list: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const x of list) out.set(x, (out.get(x) ?? 0) + 1);
  return out;
}

export class ProcessMetrics {
  // Down, not to the nearest (prom-client rounds): a process scraped in its first half second would start in the future.
  private readonly startSeconds = Math.floor(Date.now() / 1000 - process.uptime());
  private readonly loop: IntervalHistogram;
  private readonly gc = new Map<string, { counts: number[]; sum: number; n: number }>();

  constructor() {
    this.loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
    this.loop.enable();
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const kind = GC_KINDS[(entry as GcEntry).detail?.kind ?? -1];
        if (kind !== undefined) this.observeGc(kind, entry.duration / 1000);
      }
    }).observe({ entryTypes: ["gc"] });
  }

  private observeGc(kind: string, seconds: number): void {
    let h = this.gc.get(kind);
    if (h === undefined) this.gc.set(kind, (h = { counts: GC_BUCKETS.map(() => 0), sum: 0, n: 0 }));
    for (let i = 0; i < GC_BUCKETS.length; i++) if (seconds <= (GC_BUCKETS[i] as number)) h.counts[i] = (h.counts[i] as number) + 1;
    h.sum += seconds;
    h.n += 1;
  }

  /**
   * The exposition. Waits one turn of the event loop to measure its lag now; the delay
   * statistics cover the time since the previous scrape.
   */
  async text(): Promise<string> {
    const start = process.hrtime.bigint();
    await new Promise<void>((resolve) => setImmediate(resolve));
    const lag = Number(process.hrtime.bigint() - start) / 1e9;
    const e = new Exposition();
    const cpu = process.cpuUsage();
    e.family("process_cpu_user_seconds_total", "counter", "Total user CPU time spent in seconds.").sample("process_cpu_user_seconds_total", {}, cpu.user / 1e6);
    e.family("process_cpu_system_seconds_total", "counter", "Total system CPU time spent in seconds.").sample(
      "process_cpu_system_seconds_total",
      {},
      cpu.system / 1e6,
    );
    e.family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.").sample(
      "process_cpu_seconds_total",
      {},
      (cpu.user + cpu.system) / 1e6,
    );
    e.family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.").sample(
      "process_start_time_seconds",
      {},
      this.startSeconds,
    );
    const mem = process.memoryUsage();
    const status = procStatus();
    e.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.").sample("process_resident_memory_bytes", {}, status?.rss ?? mem.rss);
    if (status !== undefined) {
      e.family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.").sample("process_virtual_memory_bytes", {}, status.size);
      e.family("process_heap_bytes", "gauge", "Process heap size in bytes.").sample("process_heap_bytes", {}, status.data);
    }
    const open = openFds();
    if (open !== undefined) e.family("process_open_fds", "gauge", "Number of open file descriptors.").sample("process_open_fds", {}, open);
    const max = maxFds();
    if (max !== undefined) e.family("process_max_fds", "gauge", "Maximum number of open file descriptors.").sample("process_max_fds", {}, max);

    e.family("nodejs_eventloop_lag_seconds", "gauge", "Lag of event loop in seconds.").sample("nodejs_eventloop_lag_seconds", {}, lag);
    const h = this.loop;
    const stats: readonly [string, string, () => number][] = [
      ["min", "The minimum recorded event loop delay.", () => h.min],
      ["max", "The maximum recorded event loop delay.", () => h.max],
      ["mean", "The mean of the recorded event loop delays.", () => h.mean],
      ["stddev", "The standard deviation of the recorded event loop delays.", () => h.stddev],
      ["p50", "The 50th percentile of the recorded event loop delays.", () => h.percentile(50)],
      ["p90", "The 90th percentile of the recorded event loop delays.", () => h.percentile(90)],
      ["p99", "The 99th percentile of the recorded event loop delays.", () => h.percentile(99)],
    ];
    // No sample since the last scrape: the families without a value, not a made-up one.
    for (const [stat, help, read] of stats) {
      e.family(`nodejs_eventloop_lag_${stat}_seconds`, "gauge", help);
      if (h.count > 0) e.sample(`nodejs_eventloop_lag_${stat}_seconds`, {}, read() / 1e9);
    }
    h.reset();

    const resources = countOf(process.getActiveResourcesInfo());
    e.family("nodejs_active_resources", "gauge", "Number of active resources that are currently keeping the event loop alive, grouped by async resource type.");
    for (const [type, n] of resources) e.sample("nodejs_active_resources", { type }, n);
    e.family("nodejs_active_resources_total", "gauge", "Total number of active resources.").sample(
      "nodejs_active_resources_total",
      {},
      [...resources.values()].reduce((a, b) => a + b, 0),
    );
    const lists = process as unknown as LibuvLists;
    if (typeof lists._getActiveHandles === "function") {
      const handles = lists._getActiveHandles();
      e.family("nodejs_active_handles", "gauge", "Number of active libuv handles grouped by handle type. Every handle type is C++ class name.");
      for (const [type, n] of byConstructor(handles)) e.sample("nodejs_active_handles", { type }, n);
      e.family("nodejs_active_handles_total", "gauge", "Total number of active handles.").sample("nodejs_active_handles_total", {}, handles.length);
    }
    if (typeof lists._getActiveRequests === "function") {
      const requests = lists._getActiveRequests();
      e.family("nodejs_active_requests", "gauge", "Number of active libuv requests grouped by request type. Every request type is C++ class name.");
      for (const [type, n] of byConstructor(requests)) e.sample("nodejs_active_requests", { type }, n);
      e.family("nodejs_active_requests_total", "gauge", "Total number of active requests.").sample("nodejs_active_requests_total", {}, requests.length);
    }

    e.family("nodejs_heap_size_total_bytes", "gauge", "Process heap size from Node.js in bytes.").sample("nodejs_heap_size_total_bytes", {}, mem.heapTotal);
    e.family("nodejs_heap_size_used_bytes", "gauge", "Process heap size used from Node.js in bytes.").sample("nodejs_heap_size_used_bytes", {}, mem.heapUsed);
    e.family("nodejs_external_memory_bytes", "gauge", "Node.js external memory size in bytes.").sample("nodejs_external_memory_bytes", {}, mem.external);
    const spaces = getHeapSpaceStatistics();
    for (const [which, read] of [
      ["total", (s: (typeof spaces)[number]) => s.space_size],
      ["used", (s: (typeof spaces)[number]) => s.space_used_size],
      ["available", (s: (typeof spaces)[number]) => s.space_available_size],
    ] as const) {
      e.family(`nodejs_heap_space_size_${which}_bytes`, "gauge", `Process heap space size ${which} from Node.js in bytes.`);
      for (const s of spaces) e.sample(`nodejs_heap_space_size_${which}_bytes`, { space: s.space_name.replace(/_space$/, "") }, read(s));
    }
    const [major, minor, patch] = process.version.slice(1).split(".");
    e.family("nodejs_version_info", "gauge", "Node.js version info.").sample(
      "nodejs_version_info",
      { version: process.version, major: major ?? "", minor: minor ?? "", patch: patch ?? "" },
      1,
    );
    e.family("nodejs_gc_duration_seconds", "histogram", "Garbage collection duration by kind, one of major, minor, incremental or weakcb.");
    for (const [kind, g] of this.gc) e.histogram("nodejs_gc_duration_seconds", { kind }, GC_BUCKETS, g.counts, g.sum, g.n);
    return e.text();
  }
}

let shared: ProcessMetrics | undefined;

/** This process's collector, started on first use. */
export function processMetrics(): ProcessMetrics {
  return (shared ??= new ProcessMetrics());
}
