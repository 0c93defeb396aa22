// A bench's scratch directory, removed however the bench ends: normally, by an exception, or
// stopped by Ctrl-C or kill (SIGINT, SIGTERM). A bench under TMPDIR=/dev/shm stores a GiB or
// more there, in memory, until someone notices.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dirs = new Set();
let hooked = false;

/** A fresh directory under the temp directory, named `prefix` + random. */
export function scratchDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(dir);
  if (!hooked) {
    hooked = true;
    process.on("exit", () => {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });
    // A signal ends the process without its "exit" handlers unless it is handled.
    process.on("SIGINT", () => process.exit(130));
    process.on("SIGTERM", () => process.exit(143));
  }
  return dir;
}
