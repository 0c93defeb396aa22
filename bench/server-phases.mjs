// Preloaded into `objstate serve` by `BENCH_PHASES=1 node bench/server.mjs` (through --import):
// for each request, where its time went inside the server, as one stderr line
// `PHASES {"method","ms":{"toBackend","backend","toAnswer","handler"}}`: handler start to the
// first backend call, the backend calls (first call to last return), the last return to the
// answer's last byte handed to the socket ('finish'). The bench subtracts `handler` from what
// its client measured: the rest is the trip (request to handler, answer to client).
const dist = process.env.BENCH_PHASES_DIST;
const { ObjectStoreBackend } = await import(new URL("src/backend/backend.js", dist).href);
const { ObjstateServer } = await import(new URL("src/server/server.js", dist).href);

let current;
for (const m of ["lock", "unlock", "writeState", "readStateVersion", "lockInfo"]) {
  const original = ObjectStoreBackend.prototype[m];
  ObjectStoreBackend.prototype[m] = async function (...args) {
    const r = current;
    if (r !== undefined) r.first ??= performance.now();
    try {
      return await original.apply(this, args);
    } finally {
      if (r !== undefined) r.last = performance.now();
    }
  };
}
const handle = ObjstateServer.prototype.handle;
ObjstateServer.prototype.handle = function (req, res) {
  const r = { start: performance.now(), first: undefined, last: undefined };
  current = r; // one request at a time in the bench: a backend call belongs to the latest
  res.on("finish", () => {
    const end = performance.now();
    const ms = r.first === undefined ? { handler: end - r.start } : { toBackend: r.first - r.start, backend: r.last - r.first, toAnswer: end - r.last, handler: end - r.start };
    process.stderr.write(`PHASES ${JSON.stringify({ method: req.method, ms })}\n`);
  });
  return handle.call(this, req, res);
};
