// Quick start on the embedded store (no server): drives the `objstate` command line against
// file:./.objstate with the backend of examples/stack.json — synthesize the tool JSON,
// provision, create a workspace, push a state with outputs, lock and unlock, list the
// workspaces and read the outputs back. Run it with `npm run quickstart` (it builds first).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = fileURLToPath(new URL("../dist/src/cli/main.js", import.meta.url));
const settings = ["--config", "examples/stack.json"];

/** Run `objstate ARGS`, show the command and what it printed; check the exit code. */
function objstate(args, { expect = 0, input, quiet = false } = {}) {
  if (!quiet) console.log(`\n$ objstate ${args.map((a) => (/[\s{}"']/.test(a) ? `'${a}'` : a)).join(" ")}`);
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: root, input, encoding: "utf8" });
  if (!quiet) {
    process.stdout.write(r.stdout);
    if (r.stdout !== "" && !r.stdout.endsWith("\n")) process.stdout.write("\n");
    process.stdout.write(r.stderr);
    if (r.status !== 0) console.log(`(exit ${r.status})`);
  }
  if (r.status !== expect) {
    console.error(`quick start: expected exit ${expect} from objstate ${args.join(" ")}, got ${r.status}`);
    process.exit(1);
  }
  return r.stdout;
}

// 1. The tool JSON for the backend and the remote state of examples/stack.json.
objstate(["synth", "examples/stack.json"]);

// 2. Provision the bucket and the lock table (the embedded store would also create them on first use).
objstate(["init", "--create-bucket", "--create-table", ...settings]);

// A second run starts over: remove the workspace an earlier run created.
if (JSON.parse(objstate(["workspace", "list", "--json", ...settings], { quiet: true })).some((w) => w.name === "staging")) {
  objstate(["workspace", "delete", "staging", ...settings]);
}

// 3. A workspace, and a state with outputs pushed into it (under the workspace's lock).
objstate(["workspace", "new", "staging", ...settings]);
objstate(["state", "push", "examples/state.json", "-w", "staging", ...settings]);

// 4. Lock by hand: while it is held, a push is refused with exit 3 and names the holder.
const id = objstate(["lock", "-w", "staging", "--operation", "apply", "--info", "quick start", ...settings]).trim();
objstate(["state", "push", "examples/state.json", "-w", "staging", ...settings], { expect: 3 });
objstate(["unlock", id, "-w", "staging", ...settings]);

// 5. Workspaces, and the outputs read back (digest-checked) over defaults.
objstate(["workspace", "list", ...settings]);
objstate(["output", "-w", "staging", "--defaults", '{"region": "none"}', ...settings]);
objstate(["output", "vpc_id", "--raw", "-w", "staging", ...settings]);

// 6. Every link checked.
objstate(["doctor", "-w", "staging", ...settings]);
