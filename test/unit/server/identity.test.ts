/**
 * CI identities of `objstate serve` (issue 27): API tokens and OIDC ID tokens, as
 * `Authorization: Bearer` and as the Basic password, against a real loopback issuer
 * (test/support/oidc-issuer.ts) and the embedded store.
 */
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { ObjectStoreBackend, ObjectStoreBackendConfig } from "../../../src/index.js";
import { Identity } from "../../../src/server/identity/identity.js";
import { MAX_ISSUER_DOCUMENT_BYTES, parseIdentities } from "../../../src/server/identity/oidc.js";
import { createToken, listTokens, revokeToken, tokensFileFor } from "../../../src/server/identity/tokens.js";
import { Logger } from "../../../src/server/log.js";
import type { ObjstateServer } from "../../../src/server/server.js";
import { hashPassword, parseUsers, type User } from "../../../src/server/users.js";
import { rawRequest } from "../../support/http-backend-client.js";
import { OidcIssuer } from "../../support/oidc-issuer.js";
import { startServer } from "../../support/server-fixture.js";
import { embeddedTarget, uniqueName } from "../../support/targets.js";

const CHEAP = { N: 1024, r: 8, p: 1 };
const STATE = JSON.stringify({
  version: 4,
  terraform_version: "1.9.0",
  serial: 1,
  lineage: "8d1c7a0e-3b6a-4c1b-9e34-1f0e2d3c4b5a",
  outputs: {},
  resources: [],
});
const b64url = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString("base64url");
const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

describe("objstate serve: API tokens and OIDC identities", () => {
  let backend: ObjectStoreBackend;
  let issuer: OidcIssuer;
  let users: Map<string, User>;
  let usersFile: string;
  const servers: ObjstateServer[] = [];
  const logLines: string[] = [];
  let base: string;
  let identity: Identity;

  const rules = (iss: string): unknown => ({
    identities: [
      {
        name: "infra-main",
        issuer: iss,
        audience: "objstate",
        claims: { repository: "org/infra", ref: "refs/heads/main", ref_protected: "true" },
        roles: { "prod-*": ["read", "write", "lock"], "${claims.repository_owner}-*": ["read"] },
      },
    ],
  });

  const start = async (id: Identity): Promise<string> => {
    const s = await startServer(backend, { users, identity: id, allowUnlockedWrites: true, logger: new Logger("debug", (l) => logLines.push(l)) }, servers);
    return s.url;
  };

  const send = async (url: string, method: string, workspace: string, authorization: string, body?: string): Promise<{ status: number; text: string }> => {
    const res = await fetch(`${url}/state/${workspace}`, {
      method,
      headers: { authorization, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body,
    });
    return { status: res.status, text: await res.text() };
  };

  /** A read the roles allow: 200, or 204 for a workspace with no state yet. */
  const readable = (r: { status: number; text: string }): void => assert.ok(r.status === 200 || r.status === 204, `${r.status} ${r.text}`);

  const good = (extra: Record<string, unknown> = {}, kid = "rs-1"): Promise<string> =>
    issuer.sign(
      {
        aud: "objstate",
        sub: "repo:org/infra:ref:refs/heads/main",
        repository: "org/infra",
        repository_owner: "org",
        ref: "refs/heads/main",
        ref_protected: true,
        ...extra,
      },
      kid,
    );

  before(async () => {
    const props = await embeddedTarget().setup({ locks: true });
    backend = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined });
    issuer = await OidcIssuer.start();
    const dir = mkdtempSync(join(tmpdir(), "objstate-identity-"));
    usersFile = join(dir, "users.json");
    const doc = {
      users: { ci: { password: await hashPassword("pw-of-ci", CHEAP), roles: { "*": ["read", "write", "lock"] } } },
      ...(rules(issuer.url) as object),
    };
    writeFileSync(usersFile, JSON.stringify(doc), { mode: 0o600 });
    users = parseUsers(JSON.stringify(doc), usersFile);
    identity = new Identity(users, {
      tokensFile: tokensFileFor(usersFile),
      identities: parseIdentities(doc, usersFile),
      oidc: { refreshCooldownMs: 0, retryAfterFailureMs: 0 },
    });
    base = await start(identity);
  });

  after(async () => {
    for (const s of servers) await s.close(0);
    await issuer.down();
    backend.close();
    // No token, JWT or signature in any log line of any case.
    const log = logLines.join("");
    assert.ok(log.length > 0);
    assert.doesNotMatch(log, /objst_[0-9a-f]{12}_|eyJ[A-Za-z0-9_-]{10,}/);
  });

  it("a good RS256 ID token as Bearer writes and reads a workspace its rule grants", async () => {
    const ws = uniqueName("prod");
    const jwt = await good();
    assert.equal((await send(base, "POST", ws, `Bearer ${jwt}`, STATE)).status, 200);
    const read = await send(base, "GET", ws, `Bearer ${jwt}`);
    assert.equal(read.status, 200);
    assert.equal(JSON.parse(read.text).serial, 1);
  });

  it("a good ES256 ID token as the Basic password, user `oidc` or the rule's name; another user name is a password login and fails", async () => {
    const ws = uniqueName("prod");
    const jwt = await good({}, "es-1");
    assert.equal((await send(base, "POST", ws, basic("oidc", jwt), STATE)).status, 200);
    assert.equal((await send(base, "GET", ws, basic("infra-main", jwt))).status, 200);
    assert.equal((await send(base, "GET", ws, basic("ci", jwt))).status, 401);
  });

  it("claims in globs: ${claims.repository_owner}-* grants read on org-*, nothing more; a claim with glob characters grants nothing", async () => {
    const ws = uniqueName("org");
    readable(await send(base, "GET", ws, `Bearer ${await good()}`));
    assert.equal((await send(base, "POST", ws, `Bearer ${await good()}`, STATE)).status, 403);
    // repository_owner "*" would make the glob "*-*": it is dropped, so only prod-* remains.
    assert.equal((await send(base, "GET", uniqueName("other"), `Bearer ${await good({ repository_owner: "*" })}`)).status, 403);
  });

  it("the README's GitLab CI rules, as written: a protected ref of group/infra writes prod-*; every project of group reads the workspaces named after it, and no other's", async () => {
    const readme = readFileSync(join(fileURLToPath(new URL("../../../../", import.meta.url)), "README.md"), "utf8");
    const at = readme.indexOf("GitLab CI:");
    const text = readme.slice(readme.indexOf("```json\n", at) + 8, readme.indexOf("\n```", readme.indexOf("```json\n", at)));
    const doc = JSON.parse(text.replaceAll("https://gitlab.com", issuer.url)) as { identities: { name: string; roles: Record<string, string[]> }[] };
    const url = await start(new Identity(users, { identities: parseIdentities(doc, usersFile), oidc: { refreshCooldownMs: 0 } }));
    // GitLab's ID token claims: strings, ref_protected too.
    const gitlab = (project: string, id: string, ref = "main"): Promise<string> =>
      issuer.sign({
        aud: "https://state.example.com",
        sub: `project_path:${project}:ref_type:branch:ref:${ref}`,
        namespace_path: project.split("/")[0],
        project_path: project,
        project_id: id,
        ref,
        ref_protected: "true",
      });
    const prod = uniqueName("prod");
    assert.equal((await send(url, "POST", prod, `Bearer ${await gitlab("group/infra", "21")}`, STATE)).status, 200);
    // The workspace "named after" a project: the README's glob with the token's claims, `*` made a name.
    const [glob] = Object.keys(doc.identities.find((r) => r.name === "gitlab-any")?.roles ?? {});
    const named = (claims: Record<string, string>): string =>
      `${(glob as string).replace(/\$\{claims\.(\w+)\}/g, (_, k: string) => claims[k] as string).replace("*", "")}${uniqueName("ws")}`;
    const web = await gitlab("group/web", "22");
    readable(await send(url, "GET", named({ project_path: "group/web", project_id: "22" }), `Bearer ${web}`));
    assert.equal((await send(url, "POST", named({ project_path: "group/web", project_id: "22" }), `Bearer ${web}`, STATE)).status, 403, "read only");
    assert.equal((await send(url, "GET", named({ project_path: "group/api", project_id: "23" }), `Bearer ${web}`)).status, 403, "not another project's");
  });

  const refused: [string, () => Promise<string>, number][] = [
    ["expired", () => good({ exp: Math.floor(Date.now() / 1000) - 3600, iat: Math.floor(Date.now() / 1000) - 7200 }), 401],
    ["not yet valid", () => good({ nbf: Math.floor(Date.now() / 1000) + 3600 }), 401],
    ["wrong audience", () => good({ aud: "someone-else" }), 401],
    ["wrong issuer", () => good({ iss: "http://127.0.0.1:9/other" }), 401],
    [
      "unknown kid",
      async () => {
        await issuer.addKey("rs-unpublished", "RS256", false);
        return good({}, "rs-unpublished");
      },
      401,
    ],
    [
      "alg none",
      async () => {
        const [, payload] = (await good()).split(".");
        return `${b64url({ alg: "none", kid: "rs-1", typ: "JWT" })}.${payload}.`;
      },
      401,
    ],
    [
      "HS256 signed with the public key",
      async () => {
        const [, payload] = (await good()).split(".");
        const head = b64url({ alg: "HS256", kid: "rs-1", typ: "JWT" });
        const sig = createHmac("sha256", JSON.stringify(issuer.publicJwk("rs-1")))
          .update(`${head}.${payload}`)
          .digest("base64url");
        return `${head}.${payload}.${sig}`;
      },
      401,
    ],
    ["a claim failing its rule (ref of a branch)", () => good({ ref: "refs/heads/feature", sub: "repo:org/infra:ref:refs/heads/feature" }), 403],
    ["a claim failing its rule (ref_protected false)", () => good({ ref_protected: false }), 403],
    [
      "tampered payload",
      async () => {
        const [head, , sig] = (await good({ repository: "org/other" })).split(".");
        const payload = b64url({ ...JSON.parse(Buffer.from((await good()).split(".")[1] as string, "base64url").toString()), repository: "org/infra" });
        return `${head}.${payload}.${sig}`;
      },
      401,
    ],
  ];
  for (const [name, make, status] of refused) {
    it(`refused: ${name} → ${status}`, async () => {
      const r = await send(base, "GET", uniqueName("prod"), `Bearer ${await make()}`);
      assert.equal(r.status, status, r.text);
      assert.doesNotMatch(r.text, /eyJ/);
    });
  }

  it("a rotated JWKS: a token of the new key works after the refresh an unknown kid causes", async () => {
    await issuer.addKey("rs-2", "RS256", false);
    const before = issuer.jwksFetches;
    issuer.publishOnly("rs-2", "es-1");
    readable(await send(base, "GET", uniqueName("prod"), `Bearer ${await good({}, "rs-2")}`));
    assert.ok(issuer.jwksFetches > before);
    issuer.publishOnly("rs-1", "es-1");
  });

  it("an issuer that is down: 503 naming the issuer, never an accept; back up, accepted", async () => {
    // A server of its own: nothing of the issuer cached yet.
    const fresh = await start(
      new Identity(users, {
        identities: parseIdentities(rules(issuer.url), usersFile),
        oidc: { refreshCooldownMs: 0, fetchTimeoutMs: 2000, retryAfterFailureMs: 0 },
      }),
    );
    const jwt = await good();
    await issuer.addKey("es-2", "ES256", false);
    const unknownKid = await good({}, "es-2");
    await issuer.down();
    try {
      const r = await send(fresh, "GET", uniqueName("prod"), `Bearer ${jwt}`);
      assert.equal(r.status, 503);
      assert.match(r.text, /cannot check tokens of OIDC issuer http:\/\/127\.0\.0\.1/);
      // A cached JWKS with an unknown kid and the issuer down: 503 as well.
      const r2 = await send(base, "GET", uniqueName("prod"), `Bearer ${unknownKid}`);
      assert.equal(r2.status, 503, r2.text);
    } finally {
      await issuer.up();
    }
    readable(await send(fresh, "GET", uniqueName("prod"), `Bearer ${jwt}`));
  });

  it("a failing issuer is asked once, not once a request: a failed discovery, then a failed JWKS, answer the requests after them with 503 at once", async () => {
    const fresh = (): Promise<string> =>
      start(new Identity(users, { identities: parseIdentities(rules(issuer.url), usersFile), oidc: { refreshCooldownMs: 0 } }));
    const jwt = await good();
    try {
      for (const [path, count] of [
        ["/.well-known/openid-configuration", () => issuer.discoveryFetches],
        ["/jwks", () => issuer.jwksFetches],
      ] as const) {
        issuer.failing = new Set([path]);
        const url = await fresh();
        const before = count();
        for (let i = 0; i < 4; i++) {
          const r = await send(url, "GET", uniqueName("prod"), `Bearer ${jwt}`);
          assert.equal(r.status, 503, r.text);
          assert.match(r.text, /IDENTITY_PROVIDER_UNAVAILABLE.*HTTP 503/);
        }
        assert.equal(count() - before, 1, `${path}: one fetch for four requests`);
      }
    } finally {
      issuer.failing = new Set();
    }
  });

  it("a JWKS larger than 1 MiB is refused (503, the reason in the log), not taken whole", async () => {
    const url = await start(new Identity(users, { identities: parseIdentities(rules(issuer.url), usersFile), oidc: { refreshCooldownMs: 0 } }));
    issuer.jwksPadding = 2 * MAX_ISSUER_DOCUMENT_BYTES;
    try {
      const r = await send(url, "GET", uniqueName("prod"), `Bearer ${await good()}`);
      assert.equal(r.status, 503, r.text);
      assert.match(r.text, new RegExp(`larger than ${MAX_ISSUER_DOCUMENT_BYTES} bytes`));
      assert.ok(
        logLines.some((l) => l.includes(`larger than ${MAX_ISSUER_DOCUMENT_BYTES} bytes`)),
        "the log says why",
      );
    } finally {
      issuer.jwksPadding = 0;
    }
  });

  it("API token lifecycle: create, use as Bearer and as Basic password, list (last used), revoke → 401; expired → 401", async () => {
    const file = tokensFileFor(usersFile);
    const { token, record } = await createToken(file, "ci", 3600_000, undefined);
    assert.doesNotMatch(readFileSync(file, "utf8"), new RegExp(token));
    const ws = uniqueName("tok");
    assert.equal((await send(base, "POST", ws, `Bearer ${token}`, STATE)).status, 200);
    assert.equal((await send(base, "GET", ws, basic("anything", token))).status, 200);
    assert.equal((await send(base, "GET", ws, basic("ci", token))).status, 200);
    await identity.close(); // writes the held `last used`
    const listed = listTokens(file).find((t) => t.id === record.id);
    assert.ok(listed?.lastUsed !== undefined);
    await revokeToken(file, record.id);
    const r = await send(base, "GET", ws, `Bearer ${token}`);
    assert.equal(r.status, 401);
    assert.match(r.text, new RegExp(`API token ${record.id} was revoked`));
    const hash = createHash("sha256").update(token).digest("hex");
    assert.ok(!r.text.includes(token) && !r.text.includes(hash) && !r.text.includes(token.slice(19)));

    const old = await createToken(file, "ci", 1000, undefined, Date.now() - 10_000);
    const e = await send(base, "GET", ws, basic("ci", old.token));
    assert.equal(e.status, 401);
    assert.match(e.text, /expired/);
    assert.ok(!e.text.includes(old.token));
  });

  it('OpenTofu\'s headers = { Authorization = "Bearer …" } (no username): lock, read, write ?ID, unlock replayed as its client sends them', async () => {
    // internal/backend/remote-state/http: backend.go refuses an Authorization header beside a
    // username, so none is sent as Basic; client.go sets the user headers on every request, then
    // Content-Type and Content-MD5 when there is a body. LOCK/UNLOCK are the methods objstate's
    // http blocks name (synth --for http).
    const ws = uniqueName("prod");
    const headers = { Authorization: `Bearer ${await good({}, "es-1")}` };
    const id = "5a1e2b3c-0000-4000-8000-000000000001";
    const info = Buffer.from(
      JSON.stringify({ ID: id, Operation: "OperationTypeApply", Info: "", Who: "ci@runner", Version: "1.9.0", Created: new Date().toISOString(), Path: "" }),
    );
    assert.equal((await rawRequest(base, "LOCK", `/state/${ws}`, info, {}, headers)).status, 200);
    assert.equal((await rawRequest(base, "GET", `/state/${ws}`, undefined, {}, headers)).status, 204);
    assert.equal((await rawRequest(base, "POST", `/state/${ws}?ID=${id}`, Buffer.from(STATE), {}, headers)).status, 200);
    assert.equal((await rawRequest(base, "UNLOCK", `/state/${ws}`, info, {}, headers)).status, 200);
    assert.equal(JSON.parse((await rawRequest(base, "GET", `/state/${ws}`, undefined, {}, headers)).body.toString()).serial, 1);
    // The same replay without the header is refused at the first request.
    assert.equal((await rawRequest(base, "LOCK", `/state/${ws}`, info, {}, {})).status, 401);
  });

  it("an API token with its own roles: only those", async () => {
    const { token } = await createToken(tokensFileFor(usersFile), "ci", 3600_000, { "staging-*": ["read"] });
    readable(await send(base, "GET", uniqueName("staging"), `Bearer ${token}`));
    assert.equal((await send(base, "POST", uniqueName("staging"), `Bearer ${token}`, STATE)).status, 403);
    assert.equal((await send(base, "GET", uniqueName("prod"), `Bearer ${token}`)).status, 403);
  });

  it("an API token's roles are capped by its user's: a role the user lacks is refused whatever the token says", async () => {
    // ci has read, write and lock; the token asks for admin and force besides.
    const { token } = await createToken(tokensFileFor(usersFile), "ci", 3600_000, { "*": ["read", "write", "lock", "force", "admin"] });
    const ws = uniqueName("capped");
    readable(await send(base, "GET", ws, `Bearer ${token}`));
    assert.equal((await send(base, "POST", ws, `Bearer ${token}`, STATE)).status, 200, "what the user may do, the token may");
    assert.equal((await send(base, "DELETE", ws, `Bearer ${token}`)).status, 403, "deleting a workspace takes admin on it");
    assert.equal((await send(base, "GET", ws, `Bearer ${token}`)).status, 200, "still there");
    const audit = await fetch(`${base}/api/v1/audit`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(audit.status, 403, `admin is not the user's, so not the token's: ${await audit.text()}`);
  });

  it("an identity rule named like a users-file user is refused at load, naming both; one that got in anyway cannot release that user's lock (its lock's owner is NAME, an OIDC identity's oidc:NAME)", async () => {
    const rule = { name: "ci", issuer: issuer.url, audience: "objstate", claims: { repository: "other/repo" }, roles: { "*": ["read", "write", "lock"] } };
    const doc = { users: { ci: { roles: { "*": ["read"] } } }, identities: [rule] };
    assert.throws(
      () => parseIdentities(doc, usersFile),
      (e: Error & { code?: string }) =>
        e.code === "USERS_FILE_INVALID" && e.message.includes(usersFile) && e.message.includes("identities[0]") && e.message.includes('"ci" is also a user'),
    );
    const url = await start(new Identity(users, { identities: parseIdentities({ identities: [rule] }, usersFile), oidc: { refreshCooldownMs: 0 } }));
    const other = `Bearer ${await good({ repository: "other/repo" })}`;
    const password = basic("ci", "pw-of-ci");
    const info = (id: string): string =>
      JSON.stringify({ ID: id, Operation: "OperationTypeApply", Info: "", Who: "x", Version: "1.9.0", Created: new Date().toISOString(), Path: "" });
    const ws = uniqueName("owned");
    const id = "5a1e2b3c-0000-4000-8000-0000000000c1";
    assert.equal((await send(url, "LOCK", ws, password, info(id))).status, 200);
    assert.equal((await backend.lockInfo(ws))?.Owner, "ci", "a users-file user's lock records the name as before");
    const refused = await send(url, "UNLOCK", ws, other, info(id));
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.text, /LOCK_NOT_OWNED/);
    assert.equal((await send(url, "POST", `${ws}?ID=${id}`, other, STATE)).status, 403, "nor write under it");
    assert.equal((await backend.lockInfo(ws))?.ID, id, "the lock stays");
    assert.equal((await send(url, "UNLOCK", ws, password, info(id))).status, 200);

    const id2 = "5a1e2b3c-0000-4000-8000-0000000000c2";
    assert.equal((await send(url, "LOCK", ws, other, info(id2))).status, 200);
    assert.equal((await backend.lockInfo(ws))?.Owner, "oidc:ci");
    assert.equal((await send(url, "UNLOCK", ws, password, info(id2))).status, 403, "and the other way round");
    assert.equal((await send(url, "UNLOCK", ws, other, info(id2))).status, 200);
  });
});
