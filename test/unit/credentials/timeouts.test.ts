/** Timeouts of the SDK clients and the shared server clock (src/io/sdk-client.ts, server-clock.ts). */
import assert from "node:assert/strict";
import { it } from "node:test";
import type { Command } from "commander";
import { isObjstateError } from "../../../src/errors.js";
import { serverClockFor, serverNow } from "../../../src/io/server-clock.js";
import { DEADLINE_BYTES_PER_SECOND, DEFAULT_TIMEOUTS, deadlineMs, displayUrl, resolveTimeouts, sdkClientConfig } from "../../../src/io/sdk-client.js";

it("defaults: connect 5 s, idle 20 s, request 60 s; a short request deadline caps the other two", () => {
  assert.deepEqual(resolveTimeouts(undefined), { connectMs: 5_000, idleMs: 20_000, requestMs: 60_000 });
  assert.deepEqual(resolveTimeouts({}), DEFAULT_TIMEOUTS);
  assert.deepEqual(resolveTimeouts({ requestMs: 2_000 }), { connectMs: 2_000, idleMs: 2_000, requestMs: 2_000 });
  assert.deepEqual(resolveTimeouts({ requestMs: 600_000 }), { connectMs: 5_000, idleMs: 20_000, requestMs: 600_000 });
  assert.deepEqual(resolveTimeouts({ requestMs: 1_000, idleMs: 9_000 }), { connectMs: 1_000, idleMs: 9_000, requestMs: 1_000 });
});

it("a timeout that is not a positive number is INVALID_TIMEOUT naming it", () => {
  for (const bad of [0, -1, Number.NaN, Infinity, "5s"]) {
    assert.throws(
      () => resolveTimeouts({ idleMs: bad as number }),
      (e) => isObjstateError(e, "INVALID_TIMEOUT") && /timeouts\.idleMs/.test(e.message),
    );
  }
});

it("the deadline grows with the body: one second more per MiB", () => {
  const t = resolveTimeouts({ requestMs: 1_000 });
  assert.equal(deadlineMs(t), 1_000);
  assert.equal(deadlineMs(t, 100 * DEADLINE_BYTES_PER_SECOND), 101_000);
  assert.equal(DEADLINE_BYTES_PER_SECOND, 1024 * 1024);
});

it("clients are configured so the operator's AWS settings change nothing", () => {
  const c = sdkClientConfig({
    service: "object store",
    endpoint: "http://u:p@127.0.0.1:9",
    region: "us-east-1",
    credentials: Object.assign(async () => ({ accessKeyId: "a", secretAccessKey: "b" }), { memoized: true as const }),
    timeouts: DEFAULT_TIMEOUTS,
  });
  assert.equal(c.defaultsMode, "standard");
  assert.equal(c.maxAttempts, 3);
  assert.equal(c.retryMode, "standard");
  assert.equal(c.useFipsEndpoint, false);
  assert.equal(c.useDualstackEndpoint, false);
  assert.deepEqual(c.requestHandler.connectionTimeout, 5_000);
  assert.deepEqual(c.requestHandler.socketTimeout, 20_000);
  assert.equal(displayUrl("http://u:p@127.0.0.1:9/"), "http://127.0.0.1:9");
});

it("one clock offset per server origin, shared by every endpoint URL of that server", () => {
  const a = serverClockFor("http://127.0.0.1:7480");
  a.offsetMs = -600_000;
  assert.equal(serverClockFor("http://127.0.0.1:7480/").offsetMs, -600_000);
  assert.equal(serverClockFor("http://127.0.0.1:7481").offsetMs, 0);
  assert.ok(Math.abs(serverNow("http://127.0.0.1:7480") - (Date.now() - 600_000)) < 1_000);
});

it("--timeout is offered by every command that contacts a server (serve too), and not by synth, config, version, serve hash-password or serve token", async () => {
  const { program } = await import("../../../src/cli/program.js");
  const leaves = (c: Command): Command[] => (c.commands.length === 0 ? [c] : c.commands.flatMap(leaves));
  for (const cmd of leaves(program())) {
    const has = cmd.options.some((o) => o.long === "--timeout");
    const offline = ["synth", "config", "hash-password", "version"].includes(cmd.name()) || cmd.parent?.name() === "token";
    assert.equal(has, !offline, cmd.name());
  }
  // serve has subcommands (hash-password, token: offline) but talks to the store itself.
  assert.ok(
    program()
      .commands.find((c) => c.name() === "serve")
      ?.options.some((o) => o.long === "--timeout"),
  );
});
