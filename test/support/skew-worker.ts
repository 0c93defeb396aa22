/**
 * A backend in a process whose clock is skewed (run with the skewed-clock preload), for
 * the clock-skew tests: connects with an assumed role, then writes, reads, locks and
 * unlocks a few times. Prints one JSON line: how many AssumeRole calls succeeded and how
 * many requests were refused (403) on the wire, and the error code if anything failed.
 * Config props come as JSON in OBJSTATE_WORKER_PROPS.
 */
import dc from "node:diagnostics_channel";
import type { ClientRequest, IncomingMessage } from "node:http";
import { isObjstateError, ObjectStoreBackend, ObjectStoreBackendConfig } from "../../src/index.js";

const props = JSON.parse(process.env["OBJSTATE_WORKER_PROPS"] ?? "{}") as Record<string, unknown>;
const stsHost = new URL(String(props["endpoint"])).host;
let assumeRole = 0;
let requests = 0;
let skewRefusals = 0;
// STS is a form POST to the root of the endpoint; S3 requests always name a bucket.
const isSts = (req: ClientRequest): boolean => req.method === "POST" && req.path === "/" && req.getHeader("host") === stsHost;
dc.subscribe("http.client.request.start", () => {
  requests += 1;
});
dc.subscribe("http.client.response.finish", (m) => {
  const { request, response } = m as { request: ClientRequest; response: IncomingMessage };
  if (response.statusCode === 403) skewRefusals += 1;
  else if (isSts(request) && response.statusCode === 200) assumeRole += 1;
});

let error: string | undefined;
let message: string | undefined;
try {
  const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props as never), { env: {}, onWarning: () => undefined });
  try {
    for (let i = 0; i < 5; i++) {
      await backend.writeState("default", JSON.stringify({ version: 4, serial: i + 1, lineage: "skew", outputs: {}, resources: [] }));
      await backend.readState("default");
      const lock = await backend.lock("default", { operation: "skew" });
      await backend.unlock("default", lock.ID);
    }
  } finally {
    backend.close();
  }
} catch (e) {
  error = isObjstateError(e) ? e.code : String(e);
  message = e instanceof Error ? e.message : String(e);
}
process.stdout.write(`${JSON.stringify({ assumeRole, requests, skewRefusals, error, message })}\n`);
