// The bare transport of bench/server.mjs: a node:http server in its own process, as
// `objstate serve` runs in its own, that does nothing but move the bytes, so that the bench
// can hold the server to `server <= library + 1.5 x transport` (issue 25).
//   PUT  /keep/NAME   (untimed setup) keeps the body in memory with its Content-MD5
//   GET  /keep/NAME   answers those bytes, with the headers objstate's GET sends, in one write
//   POST /...         reads every byte of the body, counts them and drops them; 200, empty
// A POST is not hashed nor kept: the library's side of the bound already pays for the digest
// and the storage; this side is the cost of getting the bytes across loopback and through
// node:http on both ends, nothing more (docs/decisions/062-transport-baseline.md).
// Prints `listening at http://127.0.0.1:PORT` on stdout once it listens.
import { createServer } from "node:http";
import { listenLow } from "../dist/test/support/port.js";

const kept = new Map();
const server = createServer((req, res) => {
  if (req.method === "PUT") {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      kept.set(req.url, { body: Buffer.concat(chunks), md5: req.headers["content-md5"] ?? "" });
      res.writeHead(200, { "Content-Length": "0" }).end();
    });
    return;
  }
  if (req.method === "GET") {
    const k = kept.get(req.url);
    if (k === undefined) return void res.writeHead(404, { "Content-Length": "0" }).end();
    res.writeHead(200, { "Content-Type": "application/json", "Content-Length": String(k.body.length), "Content-MD5": k.md5 });
    res.end(k.body);
    return;
  }
  let n = 0;
  req.on("data", (c) => (n += c.length));
  req.on("end", () => {
    // A short body fails the bench's run (it checks the status), as a short GET does.
    res.writeHead(n === Number(req.headers["content-length"]) ? 200 : 400, { "Content-Length": "0" }).end();
  });
});
// The same keep-alive as `objstate serve` (src/server/server.ts).
server.keepAliveTimeout = 5_000;
process.stdout.write(`listening at http://127.0.0.1:${await listenLow(server)}\n`);
process.on("SIGTERM", () => process.exit(0));
