/**
 * What an operator watches of `objstate serve`, in process over the embedded store: the
 * `/metrics` exposition (names by Prometheus's rules, build info, prom-client's standard
 * process and Node.js metrics) and the request log and counters of console requests.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { Logger, type LogLevel } from "../../../src/server/log.js";
import type { ObjstateServer } from "../../../src/server/server.js";
import { objstateVersion } from "../../../src/version.js";
import { makeState } from "../../support/console-memory.js";
import { startServer } from "../../support/server-fixture.js";
import { embeddedTarget } from "../../support/targets.js";

/** prom-client's default metrics (lib/metrics/*.js): name and type, on Linux. */
const PROM_CLIENT_DEFAULTS: readonly [string, string][] = [
  ["process_cpu_user_seconds_total", "counter"],
  ["process_cpu_system_seconds_total", "counter"],
  ["process_cpu_seconds_total", "counter"],
  ["process_start_time_seconds", "gauge"],
  ["process_resident_memory_bytes", "gauge"],
  ["process_virtual_memory_bytes", "gauge"],
  ["process_heap_bytes", "gauge"],
  ["process_open_fds", "gauge"],
  ["process_max_fds", "gauge"],
  ["nodejs_eventloop_lag_seconds", "gauge"],
  ["nodejs_eventloop_lag_min_seconds", "gauge"],
  ["nodejs_eventloop_lag_max_seconds", "gauge"],
  ["nodejs_eventloop_lag_mean_seconds", "gauge"],
  ["nodejs_eventloop_lag_stddev_seconds", "gauge"],
  ["nodejs_eventloop_lag_p50_seconds", "gauge"],
  ["nodejs_eventloop_lag_p90_seconds", "gauge"],
  ["nodejs_eventloop_lag_p99_seconds", "gauge"],
  ["nodejs_active_resources", "gauge"],
  ["nodejs_active_resources_total", "gauge"],
  ["nodejs_active_handles", "gauge"],
  ["nodejs_active_handles_total", "gauge"],
  ["nodejs_active_requests", "gauge"],
  ["nodejs_active_requests_total", "gauge"],
  ["nodejs_heap_size_total_bytes", "gauge"],
  ["nodejs_heap_size_used_bytes", "gauge"],
  ["nodejs_external_memory_bytes", "gauge"],
  ["nodejs_heap_space_size_total_bytes", "gauge"],
  ["nodejs_heap_space_size_used_bytes", "gauge"],
  ["nodejs_heap_space_size_available_bytes", "gauge"],
  ["nodejs_version_info", "gauge"],
  ["nodejs_gc_duration_seconds", "histogram"],
];

/** Family name → type, from the `# TYPE` lines; and every sample line's name and value. */
function parse(text: string): { types: Map<string, string>; samples: { name: string; labels: string; value: number }[] } {
  const types = new Map<string, string>();
  const samples: { name: string; labels: string; value: number }[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("# HELP ")) continue;
    const t = /^# TYPE (\S+) (counter|gauge|histogram)$/.exec(line);
    if (t !== null) {
      assert.ok(!types.has(t[1] as string), `family ${t[1]} declared twice`);
      types.set(t[1] as string, t[2] as string);
      continue;
    }
    const s = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    assert.ok(s !== null, `not a sample line: ${line}`);
    samples.push({ name: s[1] as string, labels: s[2] ?? "", value: Number(s[3]) });
  }
  return { types, samples };
}

describe("what an operator watches", () => {
  let backend: ObjectStoreBackend;
  const started: ObjstateServer[] = [];

  before(async () => {
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(await embeddedTarget().setup({ locks: true })), {
      env: {},
      who: "ops@test",
      onWarning: () => {},
    });
    await backend.writeState("default", makeState(1, 2));
  });
  after(async () => {
    for (const s of started) await s.close(100);
    backend.close();
  });

  it("/metrics: objstate's names with the unit last, build info, and prom-client's standard process_* and nodejs_* metrics by name and type", async () => {
    const server = await startServer(backend, {}, started);
    await fetch(`${server.url}/state/default`);
    const { types, samples } = parse(await (await fetch(`${server.url}/metrics`)).text());
    for (const [name, type] of PROM_CLIENT_DEFAULTS) assert.equal(types.get(name), type, name);
    assert.equal(types.get("objstate_http_request_bytes_total"), "counter");
    assert.equal(types.get("objstate_http_response_bytes_total"), "counter");
    assert.ok(![...types.keys()].some((n) => /bytes_(in|out)/.test(n)));
    // Prometheus's rules: a counter ends in _total; a unit is last (before _total).
    for (const [name, type] of types) {
      if (type === "counter") assert.match(name, /_total$/, name);
      assert.doesNotMatch(name, /_(seconds|bytes)_(?!total$)/, name);
    }
    const one = (name: string): { labels: string; value: number } => {
      const found = samples.filter((s) => s.name === name);
      assert.equal(found.length, 1, name);
      const { labels, value } = found[0] as { labels: string; value: number };
      return { labels, value };
    };
    assert.deepEqual(one("objstate_build_info"), { labels: `{version="${objstateVersion()}",node="${process.version}"}`, value: 1 });
    assert.deepEqual(one("nodejs_version_info"), {
      labels: `{version="${process.version}",major="${process.versions.node.split(".")[0]}",minor="${process.versions.node.split(".")[1]}",patch="${process.versions.node.split(".")[2]}"}`,
      value: 1,
    });
    const now = Date.now() / 1000;
    assert.ok(one("process_start_time_seconds").value <= now && one("process_start_time_seconds").value > now - 24 * 3600);
    assert.ok(one("process_cpu_seconds_total").value > 0);
    assert.ok(one("process_resident_memory_bytes").value > 1024 * 1024);
    assert.ok(one("nodejs_heap_size_used_bytes").value > 0);
    assert.ok(one("process_open_fds").value > 0 && one("process_open_fds").value <= one("process_max_fds").value);
    assert.ok(samples.some((s) => s.name === "nodejs_heap_space_size_used_bytes" && s.labels === '{space="old"}'));
    for (const s of samples) assert.ok(!Number.isNaN(s.value), `${s.name}${s.labels} is NaN`);
  });

  it("console requests are logged and counted under their routes with the bytes sent; the lock poll is a debug line", async () => {
    const logged = async (level: LogLevel): Promise<{ server: ObjstateServer; lines: Record<string, unknown>[] }> => {
      const lines: Record<string, unknown>[] = [];
      const server = await startServer(backend, { logger: new Logger(level, (l) => lines.push(JSON.parse(l) as Record<string, unknown>)) }, started);
      return { server, lines };
    };
    const { server, lines } = await logged("info");
    const page = await (await fetch(`${server.url}/`)).text();
    const history = await (await fetch(`${server.url}/workspaces/default/history`)).text();
    await (await fetch(`${server.url}/console/locks`)).text();
    const missing = await fetch(`${server.url}/workspaces/no-such/diff`);
    await missing.text();
    const requests = lines.filter((l) => l["msg"] === "request");
    const line = (route: string): Record<string, unknown> | undefined => requests.find((l) => l["route"] === route);
    assert.equal(line("/")?.["bytesOut"], Buffer.byteLength(page));
    assert.equal(line("/")?.["level"], "info");
    assert.equal(line("/workspaces/:workspace/history")?.["bytesOut"], Buffer.byteLength(history));
    assert.equal(line("/workspaces/:workspace/diff")?.["status"], 404);
    assert.equal(line("/console/locks"), undefined, "the poll is not an info line");
    assert.ok(!requests.some((l) => l["route"] === "unmatched"), JSON.stringify(requests));
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(metrics, /^objstate_http_requests_total\{route="\/",method="GET",status="200"\} 1$/m);
    assert.match(metrics, /^objstate_http_requests_total\{route="\/console\/locks",method="GET",status="200"\} 1$/m);
    assert.match(metrics, /^objstate_http_requests_total\{route="\/workspaces\/:workspace\/diff",method="GET",status="404"\} 1$/m);
    assert.match(metrics, new RegExp(`^objstate_http_response_bytes_total\\{route="/"\\} ${Buffer.byteLength(page)}$`, "m"));
    assert.doesNotMatch(metrics, /route="unmatched"/);
    // At debug, the poll has its line, with its bytes.
    const debug = await logged("debug");
    const polled = await (await fetch(`${debug.server.url}/console/locks`)).text();
    const poll = debug.lines.find((l) => l["route"] === "/console/locks");
    assert.equal(poll?.["level"], "debug");
    assert.equal(poll?.["bytesOut"], Buffer.byteLength(polled));
  });
});
