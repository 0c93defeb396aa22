/**
 * No request ends `objstate serve` (issue 37, item 1): requests that fail at every stage —
 * bodies over the limits (declared and chunked), bodies cut off half-way, clients that reset
 * after their headers or right after their request, malformed requests — on every kind of
 * route, sent to a real server process, which must still be alive and answering after each.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { Logger } from "../../../src/server/log.js";
import { startServeProcess, type ServeProcess } from "../../support/cli.js";
import { startServer } from "../../support/server-fixture.js";
import { embeddedTarget } from "../../support/targets.js";

const JSON_TYPE = "application/json";
const FORM_TYPE = "application/x-www-form-urlencoded";
/** Over every body limit of the server below (its --max-state-size, the lock, rollback and form limits). */
const OVERSIZE = 300 * 1024;

interface RouteCase {
  readonly method: string;
  readonly path: string;
  readonly type: string | undefined;
  /** A console form, posted with the server's own Origin (as the console's page does). */
  readonly form?: boolean;
}

const ROUTES: readonly RouteCase[] = [
  { method: "POST", path: "/state/hostile?ID=x", type: JSON_TYPE },
  { method: "LOCK", path: "/state/hostile", type: JSON_TYPE },
  { method: "GET", path: "/state/hostile", type: JSON_TYPE },
  { method: "POST", path: "/api/v1/workspaces/hostile/diff", type: JSON_TYPE },
  { method: "POST", path: "/api/v1/workspaces/hostile/rollback", type: JSON_TYPE },
  { method: "POST", path: "/workspaces/hostile/force-unlock", type: FORM_TYPE, form: true },
  { method: "POST", path: "/workspaces/hostile/rollback", type: FORM_TYPE, form: true },
  { method: "GET", path: "/healthz", type: undefined },
  { method: "GET", path: "/readyz", type: undefined },
  { method: "GET", path: "/metrics", type: undefined },
];

type Stage = "oversize" | "oversize-chunked" | "cut-off" | "reset-after-headers" | "reset-after-request";
const STAGES: readonly Stage[] = ["oversize", "oversize-chunked", "cut-off", "reset-after-headers", "reset-after-request"];

function head(port: number, r: RouteCase, length: number | "chunked"): string {
  const lines = [`${r.method} ${r.path} HTTP/1.1`, `Host: 127.0.0.1:${port}`];
  if (r.type !== undefined) lines.push(`Content-Type: ${r.type}`);
  if (r.form === true) lines.push(`Origin: http://127.0.0.1:${port}`);
  lines.push(length === "chunked" ? "Transfer-Encoding: chunked" : `Content-Length: ${length}`);
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/** The status line's code, once the socket closes or an answer's head arrived (undefined: closed unanswered). */
function answer(socket: Socket): Promise<number | undefined> {
  return new Promise((resolve) => {
    let got = "";
    socket.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (m !== null && got.includes("\r\n\r\n")) resolve(Number(m[1]));
    });
    socket.on("error", () => undefined);
    socket.on("close", () => resolve(undefined));
  });
}

/** One request that goes wrong at `stage`; resolves with the status the server answered, if any. */
async function shoot(port: number, r: RouteCase, stage: Stage): Promise<number | undefined> {
  const socket = connect(port, "127.0.0.1");
  const answered = answer(socket);
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const body = Buffer.alloc(OVERSIZE, r.form === true ? "a" : " ");
  switch (stage) {
    case "oversize":
      socket.write(head(port, r, OVERSIZE));
      socket.write(body);
      break;
    case "oversize-chunked":
      socket.write(head(port, r, "chunked"));
      for (let at = 0; at < body.length; at += 32 * 1024) socket.write(`8000\r\n${body.subarray(at, at + 32 * 1024).toString("latin1")}\r\n`);
      socket.write("0\r\n\r\n");
      break;
    case "cut-off":
      socket.write(head(port, r, 2000));
      socket.end(body.subarray(0, 1000));
      break;
    case "reset-after-headers":
      socket.write(head(port, r, 2000), () => socket.resetAndDestroy());
      break;
    case "reset-after-request":
      socket.write(head(port, r, 2) + (r.form === true ? "a=" : "{}"), () => socket.resetAndDestroy());
      break;
  }
  const status = await answered;
  socket.destroy();
  return status;
}

describe("objstate serve: no request, however it fails, ends the process", () => {
  let server: ServeProcess;
  const children: ChildProcess[] = [];

  before(async () => {
    const props = await embeddedTarget().setup({ locks: true });
    const configFile = join(mkdtempSync(join(tmpdir(), "objstate-hostile-")), "backend.json");
    writeFileSync(configFile, JSON.stringify(props));
    server = await startServeProcess(["--config", configFile, "--log-level", "warn", "--max-state-size", "256KiB"]);
    children.push(server.child);
  });
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  });

  async function stillAnswering(what: string): Promise<void> {
    const r = await fetch(`${server.url}/healthz`).catch((e: unknown) => e as Error);
    assert.ok(
      !(r instanceof Error) && r.status === 200,
      `after ${what}: the server no longer answers (exit ${server.child.exitCode}); stderr: ${server.stderr()}`,
    );
    assert.equal(server.child.exitCode, null, `after ${what}: the server exited`);
  }

  it("a console form over 16 KiB is answered 413 and the server lives on (the reported crash)", async () => {
    const port = Number(new URL(server.url).port);
    const form = ROUTES.find((r) => r.form === true) as RouteCase;
    const socket = connect(port, "127.0.0.1");
    const answered = answer(socket);
    socket.write(head(port, form, 16 * 1024 + 1));
    socket.write(Buffer.alloc(16 * 1024 + 1, "a"));
    assert.equal(await answered, 413);
    socket.destroy();
    await stillAnswering("a 16,385-byte console form");
  });

  it("every stage of failure on every kind of route: the process is alive and answering after each", async () => {
    const port = Number(new URL(server.url).port);
    for (const r of ROUTES) {
      for (const stage of STAGES) {
        const status = await shoot(port, r, stage);
        if (stage === "oversize" && r.type !== undefined && r.method !== "GET") assert.equal(status, 413, `${r.method} ${r.path} ${stage}`);
        await stillAnswering(`${r.method} ${r.path} (${stage})`);
      }
    }
    const garbage = connect(port, "127.0.0.1");
    const answered = answer(garbage);
    garbage.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: nope\r\n\r\n");
    assert.equal(await answered, 400);
    garbage.destroy();
    await stillAnswering("a malformed request");
    assert.doesNotMatch(server.stderr(), /INTERNAL_ERROR|request handling failed|unexpected failure/);
  });
});

describe("objstate serve: a failure outside every handler's catch", () => {
  it("a request log that throws is caught by the last-resort guard: logged, and the server answers the next request", async () => {
    const target = embeddedTarget();
    const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(await target.setup({ locks: true })), { env: {} });
    const lines: string[] = [];
    const logger = new Logger("info", (line) => {
      if (line.includes('"msg":"request"')) throw new Error("the log's disk is full");
      lines.push(line);
    });
    const server = await startServer(backend, { logger });
    try {
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
      assert.equal((await fetch(`${server.url}/api/v1/workspaces/nope/lock`)).status, 200);
      assert.ok(
        lines.some((l) => l.includes('"msg":"request handling failed"')),
        `the guard logged the failure: ${lines.join("")}`,
      );
    } finally {
      await server.close();
      backend.close();
    }
  });
});
