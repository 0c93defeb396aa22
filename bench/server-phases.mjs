// Preloaded into `objstate serve` by `BENCH_PHASES=1 node bench/server.mjs` (through --import):
// for each request, where its time went inside the server, as one stderr line
// `PHASES {"method","ms":{"toBackend","backend","toAnswer","handler"}}`: handler start to the
// first backend call, the backend calls (first call to last return), the last return to the
// answer's last byte handed to the socket ('finish'). The bench subtracts `handler` from what
// its client measured: the rest is the trip (request to handler, answer to client). `gate` and
// `auth` are the request gate's checks (Host, cross-site, content type) and authentication (the
// login limiter and the password check, cached after the first), in ms, inside `toBackend`;
// `limiter` is the login limiter's share of `auth`.
const dist = process.env.BENCH_PHASES_DIST;
const { ObjectStoreBackend } = await import(new URL("src/backend/backend.js", dist).href);
const { ObjstateServer } = await import(new URL("src/server/server.js", dist).href);
const { RequestGate } = await import(new URL("src/server/gate.js", dist).href);
const { Authenticator } = await import(new URL("src/server/auth.js", dist).href);
const { LoginLimiter } = await import(new URL("src/server/login-limiter.js", dist).href);

let current;
for (const m of ["lock", "unlock", "writeState", "readStateVersion", "streamState", "lockInfo"]) {
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
/** Adds the time of each call of `proto[m]` to the current request's `key` (sync or async). */
function timed(proto, m, key) {
  const original = proto[m];
  proto[m] = function (...args) {
    const r = current;
    const t0 = performance.now();
    const add = () => {
      if (r !== undefined) r[key] = (r[key] ?? 0) + performance.now() - t0;
    };
    let out;
    try {
      out = original.apply(this, args);
    } catch (e) {
      add();
      throw e;
    }
    if (out instanceof Promise) return out.finally(add);
    add();
    return out;
  };
}
timed(RequestGate.prototype, "check", "gate");
timed(Authenticator.prototype, "authenticate", "auth");
timed(LoginLimiter.prototype, "begin", "limiter");
const handle = ObjstateServer.prototype.handle;
ObjstateServer.prototype.handle = function (req, res) {
  const r = { start: performance.now(), first: undefined, last: undefined };
  current = r; // one request at a time in the bench: a backend call belongs to the latest
  res.on("finish", () => {
    const end = performance.now();
    const base =
      r.first === undefined
        ? { handler: end - r.start }
        : { toBackend: r.first - r.start, backend: r.last - r.first, toAnswer: end - r.last, handler: end - r.start };
    const ms = { ...base, gate: r.gate ?? 0, limiter: r.limiter ?? 0, auth: r.auth ?? 0 };
    process.stderr.write(`PHASES ${JSON.stringify({ method: req.method, ms })}\n`);
  });
  return handle.call(this, req, res);
};
