// Regenerates docs/console.png: the Workspaces page of `objstate serve` (the real server,
// in process, with a users file) over a sample embedded store, in Debian's headless
// chromium (scripts/install-chromium.sh). Run `npm run screenshot` (it builds first: this
// imports the compiled code from dist/).
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ObjectStoreBackend } from "../dist/src/index.js";
import { launchChromium } from "../dist/test/support/browser.js";
import { makeState } from "../dist/test/support/console-memory.js";
import { startObjstateConsole } from "../dist/test/support/console-server.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "docs", "console.png");

const server = await startObjstateConsole();
const writers = new Map();
const as = async (who) => {
  if (!writers.has(who)) writers.set(who, await ObjectStoreBackend.connect(server.config, { env: {}, who, onWarning: () => {} }));
  return writers.get(who);
};
// Oldest write first: the page sorts by last write, newest first.
const sample = [
  ["network", 19, 22, "ci@runner"],
  ["default", 4, 3, "alice@laptop"],
  ["dev-bob", 7, 5, "bob@desk"],
  ["dev-alice", 12, 9, "alice@laptop"],
  ["staging", 31, 37, "ci@runner"],
  ["prod", 58, 41, "ci@runner"],
];
let browser;
try {
  for (const [name, serial, n, who] of sample) {
    const b = await as(who);
    for (let s = serial - 2; s <= serial; s++) await b.writeState(name, makeState(s, n, { endpoint: { value: `https://${name}.example` } }));
  }
  await (await as("ci@runner")).lock("prod", { operation: "apply", info: "pipeline 4187" });
  await (await as("bob@desk")).lock("dev-bob", { operation: "plan" });

  browser = await launchChromium();
  const ctx = await browser.newContext({
    httpCredentials: { username: "admin", password: "admin" },
    viewport: { width: 1000, height: 600 },
    colorScheme: "light",
  });
  const page = await ctx.newPage();
  await page.goto(`${server.url}/`);
  // Resource counts are made in the background after the first view.
  for (let i = 0; i < 50 && (await page.content()).includes("being counted"); i++) {
    await page.waitForTimeout(100);
    await page.reload();
  }
  await page.screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await browser?.close();
  for (const b of writers.values()) b.close();
  await server.close();
}
