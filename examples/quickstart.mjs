// Quick start on the embedded store (no server): build the configs of examples/stack.json,
// synthesize their tool JSON, push a state with outputs under a lock, list workspaces and
// read the outputs back. Run it with `npm run quickstart`; data goes to ./.objstate.
import { readFileSync } from "node:fs";
import {
  DataRemoteStateObjectStore,
  DataRemoteStateObjectStoreConfig,
  formatToolJson,
  mergeToolJson,
  ObjectStoreBackend,
  ObjectStoreBackendConfig,
} from "../dist/src/index.js";

const stack = JSON.parse(readFileSync(new URL("./stack.json", import.meta.url), "utf8"));
const step = (text) => console.log(`\n== ${text}`);

// 1. Configs: the backend with the builder, the remote state from plain props.
const backendConfig = ObjectStoreBackendConfig.builder()
  .bucket(stack.backend.bucket)
  .key(stack.backend.key)
  .prefix(stack.backend.prefix)
  .endpoint(stack.backend.endpoint)
  .kvstoreEndpoint(stack.backend.kvstoreEndpoint)
  .kvstoreTable(stack.backend.kvstoreTable)
  .encrypt(true)
  .acl("private")
  .build();
const network = new DataRemoteStateObjectStore("network", DataRemoteStateObjectStoreConfig.from(stack.remoteStates.network));

step("tool JSON for the backend and the remote state");
process.stdout.write(formatToolJson(mergeToolJson(backendConfig.toToolJson(), network.toToolJson())));
console.log(`reference to an output: ${network.getString("vpc_id")}`);

// 2. Push the network stack's state (with outputs) under a lock.
// (The network stack's own backend: the remote state's settings, minus defaults/workspace, plus the lock table.)
const { defaults: _d, workspace: _w, ...networkProps } = stack.remoteStates.network;
const networkBackend = await ObjectStoreBackend.connect(
  ObjectStoreBackendConfig.from({ ...networkProps, kvstoreEndpoint: stack.backend.kvstoreEndpoint, kvstoreTable: stack.backend.kvstoreTable }),
);
const state = { version: 4, serial: Date.now(), outputs: { vpc_id: { value: "vpc-0a1b2c", type: "string" }, subnet_count: { value: 3, type: "number" } }, resources: [] };
step(`push ${networkBackend.describe("default")} under a lock`);
const lock = await networkBackend.lock("default", { operation: "apply", info: "quick start" });
console.log(`locked: ID ${lock.ID} by ${lock.Who} at ${lock.Created}`);
try {
  await networkBackend.lock("default");
} catch (e) {
  console.log(`a second lock is refused: ${e.code}`);
}
await networkBackend.writeState("default", JSON.stringify(state, null, 2), { lockId: lock.ID });
await networkBackend.writeState("staging", JSON.stringify({ ...state, outputs: {} }));
await networkBackend.unlock("default", lock.ID);
console.log("unlocked");

step("workspaces");
console.log((await networkBackend.listWorkspaces()).join("\n"));

step("outputs read back (digest checked), over the remote state's defaults");
const bytes = await networkBackend.readState(network.config.workspace ?? "default");
const outputs = { ...network.config.defaults };
for (const [name, o] of Object.entries(JSON.parse(bytes.toString()).outputs ?? {})) outputs[name] = o.value;
console.log(JSON.stringify(outputs, null, 2));
networkBackend.close();
