import assert from "node:assert/strict";
import { it } from "node:test";
import { refreshing, REFRESH_MARGIN_MS } from "../../../src/credentials/refresh.js";

it("refreshes temporary credentials before expiry by the given clock, sharing one fetch", async () => {
  let now = 1_000_000;
  let fetches = 0;
  const provider = refreshing(
    async () => {
      fetches += 1;
      // A 900-second session as the server states it (absolute, real time).
      return { accessKeyId: `AK${fetches}`, secretAccessKey: "s", expiration: new Date(Date.now() + 900_000) };
    },
    () => now,
  );
  assert.equal((await provider()).accessKeyId, "AK1");
  now += 900_000 - REFRESH_MARGIN_MS - 1000; // 1 s before the refresh point: cached
  assert.equal((await provider()).accessKeyId, "AK1");
  now += 2000; // inside the margin, still before expiry: renewed
  const [a, b] = await Promise.all([provider(), provider()]);
  assert.equal(a.accessKeyId, "AK2");
  assert.equal(b.accessKeyId, "AK2");
  assert.equal(fetches, 2);
  // The renewed session counts its own lifetime from the renewal.
  now += 900_000 - REFRESH_MARGIN_MS - 1000;
  assert.equal((await provider()).accessKeyId, "AK2");
  now += 2000;
  assert.equal((await provider()).accessKeyId, "AK3");
});

it("credentials without expiry are fetched once", async () => {
  let fetches = 0;
  const provider = refreshing(async () => ((fetches += 1), { accessKeyId: "AK", secretAccessKey: "s" }));
  await provider();
  await provider();
  assert.equal(fetches, 1);
});

it("judges the expiry by the issuer's clock: a local clock 10 minutes ahead fetches once per session, not on every call", async () => {
  const SKEW = 600_000;
  let now = 5_000_000;
  let fetches = 0;
  // The server's clock is 10 minutes behind ours; its 900-second session expires in its time.
  const serverNow = (): number => Date.now() - SKEW;
  const provider = refreshing(
    async () => ((fetches += 1), { accessKeyId: `AK${fetches}`, secretAccessKey: "s", expiration: new Date(serverNow() + 900_000) }),
    () => now,
    serverNow,
  );
  for (let i = 0; i < 10; i++) {
    await provider();
    now += 60_000; // ten minutes of calls, one a minute: all inside the first session's window
  }
  assert.equal(fetches, 1);
  now += 60_000; // 11 min: less than the margin left of the 15-minute session
  assert.equal((await provider()).accessKeyId, "AK2");
});
