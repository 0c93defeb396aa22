/**
 * Who a version was written for, as history shows it: a password user, an API token's ID and
 * an OIDC identity (issuer, subject, the claims its rule used) recorded with the version and
 * read back by the library, `state history --json` and its text, and the console's page.
 * Principals are made here directly: the server's token and OIDC logins are another module's.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig, historyEntryJson, type ObjectStoreBackendConfigProps, type Principal } from "../../../src/index.js";
import { PRINCIPAL_CLAIMS_MAX } from "../../../src/backend/meta.js";
import { renderHistory } from "../../../src/console/pages/history.js";
import { runCli } from "../../support/cli.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";
import { cliArgs } from "../cli/suite.js";

const TOKEN: Principal = { name: "ci", via: "token", tokenId: "tok_1a2b3c" };
const OIDC: Principal = {
  name: "oidc",
  via: "oidc",
  oidc: {
    issuer: "https://token.actions.githubusercontent.com",
    subject: "repo:org/infra:ref:refs/heads/main",
    claims: { repository: "org/infra", ref: "refs/heads/main", environment: "prod" },
  },
};
/** Claims past what a version's metadata holds: the version keeps issuer and subject only. */
const BIG: Principal = {
  name: "oidc",
  via: "oidc",
  oidc: { issuer: "https://gitlab.example", subject: "project_path:g/p:ref_type:branch:ref:main", claims: { note: "x".repeat(PRINCIPAL_CLAIMS_MAX) } },
};
const PASSWORD: Principal = { name: "alice", via: "password" };

function state(serial: number): string {
  return `${JSON.stringify({ version: 4, terraform_version: "1.9.0", serial, lineage: "lin-principal", outputs: {}, resources: [] })}\n`;
}

describe("history shows the principal of each version: token ID and OIDC identity too", () => {
  let backend: ObjectStoreBackend;
  let props: ObjectStoreBackendConfigProps;
  const ws = uniqueName("ws");

  before(async () => {
    props = await embeddedTarget().setup({ locks: true });
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, who: "lib@principal", onWarning: () => undefined });
    await backend.writeState(ws, state(1), { principal: PASSWORD });
    await backend.writeState(ws, state(2), { principal: TOKEN });
    await backend.writeState(ws, state(3), { principal: OIDC });
    await backend.writeState(ws, state(4), { principal: BIG });
  });
  after(() => backend.close());

  it("the library reads back each version's principal with its token ID or OIDC identity", async () => {
    const got: (Principal | undefined)[] = [];
    for await (const v of backend.history(ws)) got.push(v.principal);
    assert.deepEqual(got, [
      { name: "oidc", via: "oidc", oidc: { issuer: "https://gitlab.example", subject: "project_path:g/p:ref_type:branch:ref:main", claims: {} } },
      OIDC,
      TOKEN,
      PASSWORD,
    ]);
    assert.deepEqual((await backend.lastWrite(ws))?.principal?.oidc?.issuer, "https://gitlab.example");
  });

  it("state history --json: every principal in one shape (tokenId and oidc null when not theirs); the text names the token or the identity", async () => {
    const { args, env } = cliArgs(props);
    const r = runCli(["state", "history", "--json", "-w", ws, ...args], { env });
    assert.equal(r.code, 0, r.stderr);
    const versions = (JSON.parse(r.stdout) as { versions: { principal: unknown }[] }).versions;
    assert.deepEqual(
      versions.map((v) => v.principal),
      [
        {
          name: "oidc",
          via: "oidc",
          tokenId: null,
          oidc: { issuer: "https://gitlab.example", subject: "project_path:g/p:ref_type:branch:ref:main", claims: {} },
        },
        { name: "oidc", via: "oidc", tokenId: null, oidc: OIDC.oidc },
        { name: "ci", via: "token", tokenId: "tok_1a2b3c", oidc: null },
        { name: "alice", via: "password", tokenId: null, oidc: null },
      ],
    );
    const text = runCli(["state", "history", "-w", ws, ...args], { env });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /as server user ci \(token tok_1a2b3c\)/);
    assert.match(text.stdout, /as server user oidc \(oidc repo:org\/infra:ref:refs\/heads\/main from https:\/\/token\.actions\.githubusercontent\.com\)/);
    assert.match(text.stdout, /as server user alice \(password\)/);
  });

  it("the console's History page names the token or the OIDC identity", async () => {
    const views = [];
    for await (const v of backend.history(ws)) {
      const j = historyEntryJson(v);
      views.push({
        versionId: j.versionId,
        lastModified: j.lastModified ?? "",
        size: j.size,
        serial: j.serial,
        lineage: j.lineage,
        who: v.who,
        principal: v.principal,
        isLatest: v.isLatest,
        deleteMarker: false,
      });
    }
    const page = renderHistory({ frame: { base: "", user: "admin", now: Date.now(), csrf: "t" }, workspace: ws, versions: views, canRollback: false }).value;
    assert.match(page, /data-principal>as server user ci \(token tok_1a2b3c\)</);
    assert.match(
      page,
      /data-principal>as server user oidc \(oidc repo:org\/infra:ref:refs\/heads\/main from https:\/\/token\.actions\.githubusercontent\.com\)</,
    );
  });
});
