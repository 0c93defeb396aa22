// In-memory dynalite (a DynamoDB work-alike) for the tests, bound to loopback.
// Started in the background by scripts/servers/dynalite-start.sh.
//
//   usage: node scripts/servers/dynalite-server.mjs PORT
//
// Tables become ACTIVE at once (createTableMs etc. = 0): the default 500 ms
// CREATING/DELETING/UPDATING states would only slow the tests down.
import dynalite from "dynalite";

const port = Number(process.argv[2] ?? process.env.DYNALITE_PORT ?? 17481);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error(`dynalite-server: bad port ${process.argv[2]}`);
  process.exit(2);
}

// No `path` option: the store lives in memory and vanishes on exit.
const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });

server.on("error", (err) => {
  console.error(`dynalite-server: ${err.message}`);
  process.exit(1);
});

server.listen(port, "127.0.0.1", () => {
  console.log(`dynalite-server: pid ${process.pid} listening on http://127.0.0.1:${port}`);
});

for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => {
    // Don't wait for keep-alive sockets: the data is thrown away anyway.
    server.closeAllConnections?.();
    process.exit(0);
  });
}
