// Quick start: build the configs of examples/stack.json with the library and print the
// tool JSON they synthesize. Run it with `npm run quickstart`.
import { readFileSync } from "node:fs";
import { DataRemoteStateObjectStore, DataRemoteStateObjectStoreConfig, formatToolJson, mergeToolJson, ObjectStoreBackendConfig, resolveSettings } from "../dist/src/index.js";

const stack = JSON.parse(readFileSync(new URL("./stack.json", import.meta.url), "utf8"));

// 1. A backend config, with the builder (or ObjectStoreBackendConfig.from(stack.backend)).
const backend = ObjectStoreBackendConfig.builder()
  .bucket(stack.backend.bucket)
  .key(stack.backend.key)
  .prefix(stack.backend.prefix)
  .endpoint(stack.backend.endpoint)
  .kvstoreEndpoint(stack.backend.kvstoreEndpoint)
  .kvstoreTable(stack.backend.kvstoreTable)
  .encrypt(true)
  .acl("private")
  .build();

// 2. A remote state another stack reads, and a reference to one of its outputs.
const network = new DataRemoteStateObjectStore("network", DataRemoteStateObjectStoreConfig.from(stack.remoteStates.network));
console.log(`# reference to an output: ${network.getString("vpc_id")}`);

// 3. The effective settings, with where each came from.
const settings = resolveSettings(backend, {});
console.log(`# key ${settings.key.value} (${settings.key.source}), region ${settings.region.value ?? "us-east-1 at run time"} (${settings.region.source})`);

// 4. The tool JSON for both, as one document.
process.stdout.write(formatToolJson(mergeToolJson(backend.toToolJson(), network.toToolJson())));
