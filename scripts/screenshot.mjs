// Regenerates docs/console.png: the console's Workspaces page over sample data, in
// Debian's headless chromium (scripts/install-chromium.sh). Run `npm run screenshot`
// (it builds first: this imports the compiled test support from dist/).
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium } from "../dist/test/support/browser.js";
import { makeState, MemoryConsoleApi } from "../dist/test/support/console-memory.js";
import { startConsoleServer } from "../dist/test/support/console-server.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "docs", "console.png");
const now = Date.now();
const ago = (min) => new Date(now - min * 60_000).toISOString();

const api = new MemoryConsoleApi();
const sample = [
  ["default", 4, 3, 2880, "alice@laptop"],
  ["prod", 58, 41, 45, "ci@runner"],
  ["staging", 31, 37, 12, "ci@runner"],
  ["dev-alice", 12, 9, 600, "alice@laptop"],
  ["dev-bob", 7, 5, 1500, "bob@desk"],
  ["network", 19, 22, 9000, "ci@runner"],
];
for (const [name, serial, n, minutes, who] of sample) {
  api.write(name, makeState(serial, n, { endpoint: { value: `https://${name}.example` } }), { who, operation: "apply", lastModified: ago(minutes) });
}
api.setLock("prod", { id: "9f1c2e4a-6b7d-4e3f-8a21-0c5d9e7b1a33", who: "ci@runner", operation: "apply", info: "pipeline 4187", created: ago(3) });
api.setLock("dev-bob", { id: "2b8e5f10-3c4a-4d9e-b6f7-1a2c3d4e5f60", who: "bob@desk", operation: "plan", info: "", created: ago(95) });

const server = await startConsoleServer(api);
const browser = await launchChromium();
try {
  const ctx = await browser.newContext({ httpCredentials: { username: "admin", password: "admin" }, viewport: { width: 1000, height: 600 }, colorScheme: "light" });
  const page = await ctx.newPage();
  await page.goto(`${server.url}/`);
  await page.screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  await server.close();
}
