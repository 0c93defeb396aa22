/**
 * Headless Chromium for the console's end-to-end tests: Debian's `chromium` (installed by
 * scripts/install-chromium.sh) driven by playwright-core, with the flags that keep it off
 * the network. Screenshots go to `test-output/console/` (gitignored).
 */
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

/** No sandbox (containers run as root), no GPU, and nothing that phones home. */
export const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/** The repository root (this file runs from dist/test/support/). */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: run \`bash scripts/install-chromium.sh\` (installs Debian's chromium) before the browser tests`);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true, timeout: 30_000 });
}

/** Where a test run's screenshots go; created on first use. */
export function screenshotPath(name: string): string {
  const dir = join(REPO_ROOT, "test-output", "console");
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
