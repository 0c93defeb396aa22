/**
 * A client whose clock is off (a child process with a shifted Date) against Ceph RGW STS
 * and S3 and dynalite: temporary credentials are judged by the server's clock, so there
 * is one AssumeRole per refresh window and no access-denied error, ±10 and ±20 minutes.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { before, describe, it } from "node:test";
import type { ObjectStoreBackendConfigProps } from "../../../src/index.js";
import { testServers } from "../../support/servers.js";
import { cephTarget, type Target } from "../../support/targets.js";

const PRELOAD = fileURLToPath(new URL("../../support/skewed-clock.js", import.meta.url));
const WORKER = fileURLToPath(new URL("../../support/skew-worker.js", import.meta.url));

interface WorkerReport {
  readonly assumeRole: number;
  readonly requests: number;
  readonly skewRefusals: number;
  readonly error?: string;
  readonly message?: string;
}

function runSkewed(skewMs: number, props: ObjectStoreBackendConfigProps): WorkerReport {
  const r = spawnSync(process.execPath, ["--import", PRELOAD, WORKER], {
    env: {
      PATH: process.env["PATH"],
      OBJSTATE_TEST_CLOCK_SKEW_MS: String(skewMs),
      OBJSTATE_WORKER_PROPS: JSON.stringify(props),
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    },
    encoding: "utf8",
    timeout: 120_000,
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split("\n").pop() as string) as WorkerReport;
}

describe("clock skew against Ceph RGW STS", () => {
  const s = testServers();
  let target: Target;
  before(() => {
    target = cephTarget();
  });

  async function props(): Promise<ObjectStoreBackendConfigProps> {
    return { ...(await target.setup({ locks: true })), assumeRoleRoleArn: s.roleArn, assumeRoleSessionName: "skewed", assumeRoleSessionExpiration: 900 };
  }

  it("the preload moves the child's clock", () => {
    const r = spawnSync(
      process.execPath,
      ["--import", PRELOAD, "-e", "process.stdout.write(String(Date.now() - performance.timeOrigin - performance.now()))"],
      {
        env: { PATH: process.env["PATH"], OBJSTATE_TEST_CLOCK_SKEW_MS: "600000" },
        encoding: "utf8",
      },
    );
    assert.ok(Math.abs(Number(r.stdout) - 600_000) < 5_000, r.stdout + r.stderr);
  });

  for (const minutes of [10, -10, 20, -20]) {
    it(`${minutes > 0 ? "ahead" : "behind"} by ${Math.abs(minutes)} minutes: one AssumeRole for a 900 s session, no access denied`, async () => {
      const report = runSkewed(minutes * 60_000, await props());
      assert.equal(report.error, undefined, report.message);
      assert.equal(report.assumeRole, 1, `AssumeRole calls: ${JSON.stringify(report)}`);
      // RGW accepts 15 minutes of skew; beyond, only the first request (STS) is refused and
      // every later one, of any client, is signed with the measured offset.
      assert.ok(report.skewRefusals <= (Math.abs(minutes) > 15 ? 1 : 0), `clock-skew refusals: ${JSON.stringify(report)}`);
    });
  }
});
