// The library's side of bench/server.mjs's transfers, in a process of its own, as the server and
// the bare transport each run in theirs (docs/decisions/081-request-bodies-go-into-lent-buffers.md).
// In the bench's process the library ran beside the bench's own data (a 64 MiB padding string
// and the states it sends): an old generation of ~100 MB, whose collection limit is far away,
// so it rarely collected fully, while a server with a ~10 MB heap marks and compacts every few
// writes. Here its heap is its own, like a CLI's or a program's that calls it.
//   node library-child.mjs DIST CONFIG_JSON     (with an IPC channel)
// Messages: {id, op: "write", ws, serial, size} writes a state of `size` bytes with that serial;
// {id, op: "read", ws, size} reads the workspace's state and checks its size. Each answers
// {id, ms, cpu}: wall ms of the library call alone (the state is made before the clock starts)
// and the CPU ms of this process (all threads) over it; or {id, error}.
import { randomBytes } from "node:crypto";

const [dist, configJson] = process.argv.slice(2);
const { ObjectStoreBackend, ObjectStoreBackendConfig } = await import(new URL("src/index.js", dist).href);
const backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(JSON.parse(configJson)), { env: {}, onWarning: () => undefined });

// Padding as bytes, not a string: a string of this size would sit in this process's heap and
// move its collection limit, which is what this process is here to avoid.
const ALPHABET = Buffer.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
const padding = randomBytes(64 * 1024 * 1024);
for (let i = 0; i < padding.length; i++) padding[i] = ALPHABET[padding[i] & 63];

/** A state of `size` bytes shaped as bench/server.mjs's stateOf makes them (its serial given). */
const stateOf = (serial, size) => {
  const head = Buffer.from(`{"version":4,"serial":${serial},"lineage":"bench","pad":"`);
  return Buffer.concat([head, padding.subarray(0, size - head.length - 2), Buffer.from('"}')]);
};

const timed = async (fn) => {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { ms, cpu: (c.user + c.system) / 1000 };
};

process.on("message", async (m) => {
  try {
    if (m.op === "write") {
      const state = stateOf(m.serial, m.size);
      process.send({ id: m.id, ...(await timed(() => backend.writeState(m.ws, state))) });
    } else if (m.op === "read") {
      let got = -1;
      const t = await timed(async () => (got = (await backend.readState(m.ws)).length));
      if (got !== m.size) throw new Error(`short read: ${got} of ${m.size} bytes`);
      process.send({ id: m.id, ...t });
    } else throw new Error(`unknown op ${m.op}`);
  } catch (e) {
    process.send({ id: m.id, error: String(e?.stack ?? e) });
  }
});
process.on("disconnect", () => process.exit(0));
process.send({ ready: true });
