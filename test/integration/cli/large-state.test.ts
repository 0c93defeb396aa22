/**
 * `state push` of a state over 512 MiB (V8's longest string), through the built CLI, to
 * Ceph RGW + dynalite and to the embedded store: the file is checked and sent streamed, so
 * the process's peak memory stays far below the file's size; a syntax error near the end
 * (or a `NaN` / trailing comma deep inside) is refused with its line and column, and
 * nothing is written.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, it } from "node:test";
import type { ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { CLI, cliEnv } from "../../support/cli.js";
import { cephTarget, embeddedTarget, type Target } from "../../support/targets.js";
import { cliArgs } from "../../unit/cli/suite.js";

const MiB = 1024 * 1024;
/** Over V8's longest string (2^29 - 24 characters, about 512 MiB); little more, as the test Ceph keeps objects in RAM. */
const STATE_MIB = 520;
/** Peak resident memory the pushing process may reach: a third of the file. */
const RSS_LIMIT_KIB = 200 * 1024;
const KEY = "env:/tool.tfstate";

const work = mkdtempSync(join(tmpdir(), "objstate-large-"));
const big = join(work, "big.tfstate");
/** Written into the CLI at exit (a preload): its peak resident memory, from the kernel, and its CPU time (ms, all threads). */
const probe = join(work, "rss-probe.mjs");
writeFileSync(
  probe,
  `import { readFileSync, writeFileSync } from "node:fs";
process.on("exit", () => {
  const m = /VmHWM:\\s+(\\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
  const cpu = process.cpuUsage();
  writeFileSync(process.env.OBJSTATE_TEST_RSS_FILE, \`\${m === null ? process.resourceUsage().maxRSS : m[1]} \${(cpu.user + cpu.system) / 1000}\`);
});
`,
);

/**
 * The tail of the state, each variant the same length (so the file is generated once and
 * only its last bytes change): valid, a syntax error near the end, `NaN` and a trailing
 * comma deep inside a resource.
 */
const TAILS = {
  valid: `,\n      "deep": [[[{"v": 1}]]]\n    }}]}]\n}\n   `,
  endError: `,\n      "deep": [[[{"v": 1}]]]\n    }}]}]\n} x\n `,
  nan: `,\n      "deep": [[[{"v": NaN}]]]\n    }}]}]\n}\n `,
  trailingComma: `,\n      "deep": [[[{"v": 1,}]]]\n    }}]}]\n}\n  `,
} as const;
let tailOffset = 0;
let validMd5 = "";
let size = 0;

/** A v4 state: header lines, one resource whose attribute is a 600 MiB string, then a tail. */
async function generate(): Promise<void> {
  const head = `{\n  "version": 4,\n  "terraform_version": "1.9.0",\n  "serial": 3,\n  "lineage": "5d0b3ba4-large-state",\n  "outputs": {"name": {"value": "big", "type": "string"}},\n  "resources": [{"mode": "managed", "type": "pad", "name": "p", "provider": "provider[\\"example/pad\\"]", "instances": [{"schema_version": 0, "attributes": {\n      "blob": "`;
  const fd = openSync(big, "w");
  const hash = createHash("md5");
  const put = (b: Buffer): void => {
    writeSync(fd, b);
    hash.update(b);
  };
  put(Buffer.from(head));
  const chunk = Buffer.from("0123456789abcdef".repeat(MiB / 16));
  for (let i = 0; i < STATE_MIB; i++) put(chunk);
  put(Buffer.from(`"`));
  tailOffset = Buffer.byteLength(head) + STATE_MIB * MiB + 1;
  put(Buffer.from(TAILS.valid));
  closeSync(fd);
  validMd5 = hash.digest("hex");
  size = tailOffset + Buffer.byteLength(TAILS.valid);
  await Promise.resolve();
}

function setTail(tail: string): void {
  assert.equal(Buffer.byteLength(tail), Buffer.byteLength(TAILS.valid));
  const fd = openSync(big, "r+");
  writeSync(fd, Buffer.from(tail), 0, Buffer.byteLength(tail), tailOffset);
  closeSync(fd);
}

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Peak resident memory of the CLI process (KiB). */
  readonly peakKiB: number;
  /** CPU time of the CLI process (ms). */
  readonly cpuMs: number;
}

/** Run the CLI with the memory probe preloaded; standard output hashed as it streams (`state pull | md5`). */
function run(args: string[], env: Record<string, string>): Promise<Run & { stdoutMd5: string }> {
  const rssFile = join(work, `rss-${Math.random().toString(36).slice(2)}`);
  const child = spawn(process.execPath, ["--import", pathToFileURL(probe).href, CLI, ...args], {
    env: cliEnv({ ...env, OBJSTATE_TEST_RSS_FILE: rssFile }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const hash = createHash("md5");
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    hash.update(d);
    if (stdout.length < 4096) stdout += d.toString("utf8");
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  // A hung command is ended within the test's budget (how fast it works is bounded by its CPU time).
  const timer = setTimeout(() => child.kill("SIGKILL"), 170_000);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      const [peakKiB, cpuMs] = existsSync(rssFile) ? readFileSync(rssFile, "utf8").split(" ").map(Number) : [];
      resolve({ code, stdout, stderr, peakKiB: peakKiB ?? Number.NaN, cpuMs: cpuMs ?? Number.NaN, stdoutMd5: hash.digest("hex") });
    });
  });
}

before(async () => {
  await generate();
});

after(() => {
  rmSync(work, { recursive: true, force: true });
});

for (const makeTarget of [embeddedTarget, cephTarget]) {
  describe(`state push of a ${STATE_MIB} MiB state (${makeTarget === cephTarget ? "Ceph RGW + dynalite" : "embedded"})`, () => {
    let target: Target;
    let props: ObjectStoreBackendConfigProps;
    let args: string[];
    let env: Record<string, string>;
    before(async () => {
      target = makeTarget();
      props = await target.setup({ locks: true });
      ({ args, env } = cliArgs(props));
    });

    it("is pushed streamed (peak memory far below its size), pulled back byte-exact, and a second push writes nothing", { timeout: 180_000 }, async () => {
      setTail(TAILS.valid);
      const started = Date.now();
      const push = await run(["state", "push", big, "--json", ...args], env);
      assert.equal(push.code, 0, push.stderr);
      assert.deepEqual(JSON.parse(push.stdout), {
        workspace: "default",
        path: `${props.bucket}/${KEY}`,
        bytes: size,
        locked: true,
        written: true,
        md5: validMd5,
      });
      assert.ok(push.peakKiB < RSS_LIMIT_KIB, `peak RSS ${push.peakKiB} KiB for a ${size}-byte state (limit ${RSS_LIMIT_KIB} KiB)`);

      const raw = await target.raw(props.bucket);
      try {
        const meta = await raw.head(KEY);
        assert.equal(meta?.size, size);
        assert.equal(meta?.etag, validMd5, "a single PutObject: the store's ETag is the MD5 of the bytes");
        assert.equal(meta?.metadata?.["objstate-md5"], validMd5);
        assert.equal(meta?.metadata?.["objstate-serial"], "3");
      } finally {
        raw.close();
      }
      const pull = await run(["state", "pull", ...args], env);
      assert.equal(pull.code, 0, pull.stderr);
      assert.equal(pull.stdoutMd5, validMd5);

      const again = await run(["state", "push", big, ...args], env);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, new RegExp(`already holds this state \\(MD5 ${validMd5}\\); nothing written`));
      assert.ok(again.peakKiB < RSS_LIMIT_KIB, `peak RSS ${again.peakKiB} KiB on the same-content push`);
      // The commands' own work within a minute, whatever else the machine runs; the wall
      // time, which the store's side and a loaded machine add to, within the test's budget.
      const cpuMs = push.cpuMs + pull.cpuMs + again.cpuMs;
      assert.ok(cpuMs < 60_000, `the three commands took ${Math.round(cpuMs)} ms of CPU`);
      assert.ok(Date.now() - started < 170_000);
    });

    after(async () => {
      // The test Ceph keeps objects in memory (memstore): give the space back at once.
      const raw = await target.raw(props.bucket);
      try {
        await raw.purge(KEY);
      } finally {
        raw.close();
      }
    });

    if (makeTarget === embeddedTarget) {
      const refused: [string, keyof typeof TAILS, () => RegExp][] = [
        ["a syntax error near the end", "endError", () => /line 11, column 3: unexpected character after the end of the JSON object/],
        ["NaN deep inside", "nan", () => /line 9, column 24: unexpected character/],
        ["a trailing comma deep inside", "trailingComma", () => /line 9, column 26: unexpected character/],
      ];
      for (const [name, tail, pattern] of refused) {
        it(`refuses ${name}: exit 2, line and column, none of the text, nothing written`, { timeout: 180_000 }, async () => {
          const fresh = await target.setup({ locks: true });
          const c = cliArgs(fresh);
          setTail(TAILS[tail]);
          try {
            const r = await run(["state", "push", big, ...c.args], c.env);
            assert.equal(r.code, 2, r.stderr);
            assert.match(r.stderr, /^objstate: error: the state to write to workspace "[^"]+" is not valid JSON at /);
            assert.match(r.stderr, pattern());
            assert.equal(r.stderr.split("\n").filter((l) => l !== "").length, 1, r.stderr);
            assert.ok(!r.stderr.includes("NaN") && !r.stderr.includes("0123"), r.stderr);
            assert.ok(r.peakKiB < RSS_LIMIT_KIB, `peak RSS ${r.peakKiB} KiB`);
            assert.equal(existsSync(target.bucketDir?.(fresh.bucket) ?? "/nonexistent"), false, "nothing was written (the bucket was never created)");
          } finally {
            setTail(TAILS.valid);
          }
        });
      }
    }
  });
}
