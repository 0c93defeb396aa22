/**
 * Behaviour of DataRemoteStateObjectStore.fetchOutputs (docs/design.md §6), run unchanged against
 * the embedded store + table and against Ceph RGW + dynalite, with and without a lock table.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import {
  DataRemoteStateObjectStore,
  DataRemoteStateObjectStoreConfig,
  ObjectStoreBackend,
  ObjectStoreBackendConfig,
  isObjstateError,
  type DataRemoteStateObjectStoreConfigProps,
  type ErrorCode,
  type FetchOutputsOptions,
  type ObjectStoreBackendConfigProps,
} from "../../../src/index.js";
import { DEFAULT_SCAN_THRESHOLD } from "../../../src/remote-state/fetch-outputs.js";
import { uniqueName, type Target } from "../../support/targets.js";

export const FAST_DIGEST = { timeoutMs: 300, intervalMs: 100 };

/** A version-4 state with these root outputs (name → value; the type is made up). */
export function stateWith(outputs: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  const entries = Object.entries(outputs).map(([k, value]) => [k, { value, type: typeof value }]);
  return JSON.stringify(
    { version: 4, terraform_version: "1.5.7", serial: 3, lineage: "l-1", outputs: Object.fromEntries(entries), resources: [], ...extra },
    null,
    2,
  );
}

/** Everything a read could leave behind, as sorted lines: objects, lock-table items, the bucket itself. */
export type Snapshot = (props: ObjectStoreBackendConfigProps) => Promise<string[]>;

export interface OutputsSuiteOptions {
  readonly snapshot: Snapshot;
}

/** Rejects with an ObjstateError of `code`; returns it. */
export async function rejectsWith(p: Promise<unknown>, code: ErrorCode): Promise<Error & { code: string; details?: Readonly<Record<string, unknown>> }> {
  try {
    await p;
  } catch (e) {
    assert.ok(isObjstateError(e, code), `expected ${code}, got ${(e as { code?: string }).code}: ${(e as Error).message}`);
    return e;
  }
  assert.fail(`expected ${code}, but it resolved`);
}

export function outputsSuite(makeTarget: () => Target, options: OutputsSuiteOptions): void {
  let target: Target;
  const warnings: { message: string; code: string }[] = [];
  const open: ObjectStoreBackend[] = [];
  const fetchOptions: FetchOutputsOptions = { env: {}, digestRetry: FAST_DIGEST, onWarning: (message, code) => warnings.push({ message, code }) };

  before(() => {
    target = makeTarget();
  });
  after(() => {
    for (const b of open) b.close();
  });

  /**
   * A backend whose writes replace whatever is stored: these tests store one state after
   * another in the same workspace, not a history, so the lineage guard is not their subject.
   */
  async function writer(props: ObjectStoreBackendConfigProps): Promise<ObjectStoreBackend> {
    const b = await ObjectStoreBackend.connect(ObjectStoreBackendConfig.from(props), { env: {}, onWarning: () => undefined, digestRetry: FAST_DIGEST });
    open.push(b);
    const write = b.writeState.bind(b);
    const raw = await target.raw(props.bucket);
    b.writeState = async (workspace, data, options = {}) => {
      try {
        return await write(workspace, data, { force: true, ...options });
      } catch (e) {
        if (!isObjstateError(e, "STATE_INVALID")) throw e;
        // Bytes objstate refuses to write (decision 089), stored as another tool could, their digest recorded.
        await raw.put(b.statePath(workspace), Buffer.from(data as string));
        if (b.lockingEnabled) await b.repairState(workspace, { force: true });
        return { written: true, md5: "", serial: undefined };
      }
    };
    return b;
  }

  function remote(props: ObjectStoreBackendConfigProps, extra: Partial<DataRemoteStateObjectStoreConfigProps> = {}): DataRemoteStateObjectStore {
    return new DataRemoteStateObjectStore("net", DataRemoteStateObjectStoreConfig.from({ ...props, ...extra }));
  }

  for (const locks of [true, false]) {
    describe(`${locks ? "with" : "without"} a lock table`, () => {
      it("merges the state's root outputs over the defaults: defaults fill missing names, state outputs win", async () => {
        const props = await target.setup({ locks });
        await (await writer(props)).writeState("default", stateWith({ vpc_id: "vpc-1", subnets: ["a", "b"], count: 3, shared: null }));
        const out = await remote(props, { defaults: { vpc_id: "none", region: "eu", shared: "default-value", nested: { a: [1] } } }).fetchOutputs(fetchOptions);
        assert.deepEqual(out.toJSON(), { vpc_id: "vpc-1", region: "eu", shared: null, nested: { a: [1] }, subnets: ["a", "b"], count: 3 });
        assert.deepEqual(out.names(), ["count", "nested", "region", "shared", "subnets", "vpc_id"]);
        assert.equal(out.string("vpc_id"), "vpc-1");
        assert.equal(out.string("region"), "eu");
        assert.equal(out.get("shared"), null, "a state output wins even when its value is null");
        assert.equal(out.source.workspace, "default");
        assert.equal(out.source.name, "net");
      });

      it("reads the configured workspace's state", async () => {
        const props = await target.setup({ locks, extra: { prefix: "team", key: "net.tfstate" } });
        const w = await writer(props);
        await w.writeState("default", stateWith({ env: "default" }));
        await w.writeState("staging", stateWith({ env: "staging", only_staging: true }));
        const staging = await remote(props, { workspace: "staging" }).fetchOutputs(fetchOptions);
        assert.deepEqual(staging.toJSON(), { env: "staging", only_staging: true });
        assert.equal(staging.source.location, `${props.bucket}/team/staging/net.tfstate`);
        assert.deepEqual((await remote(props).fetchOutputs(fetchOptions)).toJSON(), { env: "default" });
        const e = await rejectsWith(remote(props, { workspace: "prod" }).fetchOutputs(fetchOptions), "STATE_NOT_FOUND");
        assert.equal(e.message, `no stored state for workspace prod at ${props.bucket}/team/prod/net.tfstate`);
      });

      it("typed accessors return values and name the output, expected and actual type on a mismatch", async () => {
        const props = await target.setup({ locks });
        await (
          await writer(props)
        ).writeState("default", stateWith({ name: "web", count: "3", n: 2.5, on: false, list: [1, "x"], map: { k: "v" }, nothing: null }));
        const out = await remote(props).fetchOutputs(fetchOptions);
        assert.equal(out.string("name"), "web");
        assert.equal(out.number("n"), 2.5);
        assert.equal(out.boolean("on"), false);
        assert.deepEqual(out.list("list"), [1, "x"]);
        assert.deepEqual(out.get("map"), { k: "v" });
        const mismatch = (f: () => unknown, text: string, expected: string, actual: string): void => {
          assert.throws(f, (e: unknown) => {
            assert.ok(isObjstateError(e, "OUTPUT_TYPE_MISMATCH"));
            assert.ok(e.message.startsWith(text), e.message);
            assert.deepEqual(e.details, { output: text.split('"')[1], expected, actual });
            return true;
          });
        };
        mismatch(() => out.number("count"), 'output "count" is a string, not a number', "number", "string");
        mismatch(() => out.string("nothing"), 'output "nothing" is null, not a string', "string", "null");
        mismatch(() => out.list("map"), 'output "map" is an object, not a list', "list", "object");
        mismatch(() => out.boolean("list"), 'output "list" is a list, not a boolean', "boolean", "list");
        mismatch(() => out.string("on"), 'output "on" is a boolean, not a string', "string", "boolean");
        assert.throws(
          () => out.string("missing"),
          (e: unknown) =>
            isObjstateError(e, "OUTPUT_NOT_FOUND") &&
            /no output "missing"/.test(e.message) &&
            e.message.endsWith("available: count, list, map, n, name, nothing, on"),
        );
      });

      it("a missing state is STATE_NOT_FOUND naming workspace, bucket and path, not an empty result", async () => {
        const props = await target.setup({ locks });
        const e = await rejectsWith(remote(props, { defaults: { a: 1 } }).fetchOutputs(fetchOptions), "STATE_NOT_FOUND");
        assert.equal(e.message, `no stored state for workspace default at ${props.bucket}/env:/tool.tfstate`);
      });

      it("a missing bucket is STATE_NOT_FOUND too, and the read does not create it", async () => {
        const props = { ...(await target.setup({ locks })), bucket: uniqueName("nob") };
        const before = await options.snapshot(props);
        const e = await rejectsWith(remote(props).fetchOutputs(fetchOptions), "STATE_NOT_FOUND");
        assert.ok(e.message.startsWith(`no stored state for workspace default at ${props.bucket}/env:/tool.tfstate`), e.message);
        assert.deepEqual(await options.snapshot(props), before);
        const raw = await target.raw(props.bucket);
        assert.equal(await raw.bucketExists(), false);
        raw.close();
      });

      it("a read creates nothing and takes no lock", async () => {
        const props = await target.setup({ locks });
        const w = await writer(props);
        await w.writeState("default", stateWith({ a: 1 }));
        const before = await options.snapshot(props);
        assert.deepEqual((await remote(props).fetchOutputs(fetchOptions)).toJSON(), { a: 1 });
        await rejectsWith(remote(props, { workspace: "other" }).fetchOutputs(fetchOptions), "STATE_NOT_FOUND");
        assert.deepEqual(await options.snapshot(props), before);
        assert.equal(await w.lockInfo("default"), null);
      });

      it("a read is not blocked by someone holding the lock", async () => {
        const props = await target.setup({ locks });
        const w = await writer(props);
        await w.writeState("default", stateWith({ a: 2 }));
        const lock = await w.lock("default", { operation: "apply" });
        assert.deepEqual((await remote(props).fetchOutputs(fetchOptions)).toJSON(), { a: 2 });
        assert.equal((await w.lockInfo("default"))?.ID, locks ? lock.ID : undefined);
        await w.unlock("default", lock.ID);
      });

      it("a state that is not valid JSON, not a state, or has malformed outputs is STATE_INVALID naming workspace and path", async () => {
        const props = await target.setup({ locks });
        const w = await writer(props);
        const where = `workspace default at ${props.bucket}/env:/tool.tfstate`;
        const cases: [string, RegExp][] = [
          [
            '{"version": 4, "outputs": {"password": {"value": "hunter2"}}} x',
            /is not valid JSON: Unexpected non-whitespace character after JSON at line 1, column \d+$/,
          ],
          ['{"version": 4,\n "outputs": {"a": {"value": hunter2}}}', /is not valid JSON: unexpected character at line 2, column 29$/],
          ['{"version": 4,\n  "resources": [1,],\n  "outputs": {}}', /is not valid JSON: unexpected character at line 2, column 19$/],
          ['[{"outputs": {}}]', /is not a state: its top level is an array, not an object$/],
          ['"hunter2"', /is not a state: its top level is a string, not an object$/],
          ['{"version": 4, "outputs": [1]}', /has malformed outputs: expected an object of \{"value": …, "type": …\} entries, got a list$/],
          ['{"version": 4, "outputs": "hunter2"}', /has malformed outputs: .* got a string$/],
          [
            '{"version": 4, "outputs": {"ok": {"value": 1}, "bad": {"type": "string"}}}',
            /has a malformed output "bad": expected an object with a "value" member$/,
          ],
          ['{"version": 4, "outputs": {"bad": "hunter2"}}', /has a malformed output "bad"/],
          ['{"version": 5, "outputs": {}}', /has format version 5; objstate reads state format versions 1 to 4$/],
          ['{"version": "4", "outputs": {}}', /has format version "4"; objstate reads state format versions 1 to 4$/],
          ['{"version": 4.0, "outputs": {}}', /has format version 4\.0; objstate reads state format versions 1 to 4$/],
          ['{"outputs": {"a": {"value": 1}}}', /is not a state: it has no "version" member/],
          ['{"version": 3, "modules": {"path": ["root"]}}', /has malformed modules: expected a list of modules, got an object$/],
          ['{"version": 3, "modules": [{"path": ["mod"], "outputs": {}}]}', /has an invalid module path \["mod"\] \(modules\[0\]\): paths start with "root"$/],
          ['{"version": 2, "modules": [{"outputs": {}}]}', /has a malformed module \(modules\[0\]\): its "path" is not a list of names$/],
          [
            '{"version": 3, "modules": [{"path": ["root"], "outputs": {"bad": {"type": "string"}}}]}',
            /has a malformed output "bad": expected a value or an object with a "value" member$/,
          ],
          [
            `{"version": 4, "resources": ${"[".repeat(10_000)}${"]".repeat(10_000)}, "outputs": {}}`,
            /cannot be read: it is nested more than 10000 levels deep \(the tool's limit\)$/,
          ],
        ];
        for (const [state, pattern] of cases) {
          await w.writeState("default", state);
          // The same answer whether the state is scanned (large) or parsed whole (small).
          for (const scanThreshold of [0, Infinity]) {
            const e = await rejectsWith(remote(props).fetchOutputs({ ...fetchOptions, scanThreshold }), "STATE_INVALID");
            assert.ok(e.message.startsWith(`the state of ${where} `), e.message);
            assert.match(e.message, pattern);
            assert.ok(!e.message.includes("hunter2"), `no state text in the message: ${e.message}`);
            assert.equal(e.cause, undefined, "V8's message (which quotes the text) is not kept as the cause");
          }
        }
      });

      it('a state without outputs, or with "outputs": null, gives the defaults', async () => {
        const props = await target.setup({ locks });
        await (await writer(props)).writeState("default", '{"version": 4, "resources": []}');
        assert.deepEqual((await remote(props, { defaults: { d: true } }).fetchOutputs(fetchOptions)).toJSON(), { d: true });
        await (await writer(props)).writeState("default", '{"version": 4, "outputs": null, "resources": []}');
        for (const scanThreshold of [0, Infinity]) {
          assert.deepEqual((await remote(props, { defaults: { d: true } }).fetchOutputs({ ...fetchOptions, scanThreshold })).toJSON(), { d: true });
        }
        await (await writer(props)).writeState("default", '{"version": 4}');
        const out = await remote(props).fetchOutputs(fetchOptions);
        assert.deepEqual(out.names(), []);
        assert.throws(
          () => out.get("x"),
          (e: unknown) => isObjstateError(e, "OUTPUT_NOT_FOUND") && e.message.endsWith("there are no outputs"),
        );
      });

      it("property: scanned (scanThreshold 0) and parsed whole (Infinity), a state gives the same outputs or the same error", async () => {
        const props = await target.setup({ locks });
        const w = await writer(props);
        const outcome = async (scanThreshold: number): Promise<string> => {
          try {
            return `ok ${(await remote(props).fetchOutputs({ ...fetchOptions, scanThreshold })).toJSONText()}`;
          } catch (e) {
            return `${(e as { code?: string }).code} ${(e as Error).message}`;
          }
        };
        const damage = fc.constantFrom(",", "]", "}", "[", "{", ":", "0", "NaN", "tru", '"', "\\", "\t", " ", "-", ".", "1e", "");
        await fc.assert(
          fc.asyncProperty(
            fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
            fc.nat(),
            damage,
            fc.boolean(),
            async (outs, at, ch, insert) => {
              const text = stateWith(outs, { resources: [{ type: "t", attributes: { n: 12345678901234567890n.toString(), list: [1, 2, { a: null }] } }] });
              const i = at % (text.length + 1);
              const state = `${text.slice(0, i)}${ch}${text.slice(insert ? i : i + 1)}`;
              await w.writeState("default", state);
              const scanned = await outcome(0);
              assert.equal(scanned, await outcome(Infinity), state);
              assert.equal(
                scanned.startsWith("STATE_INVALID") && / is not valid JSON: /.test(scanned),
                ((): boolean => {
                  try {
                    JSON.parse(state);
                    return false;
                  } catch {
                    return true;
                  }
                })(),
                `refused exactly when JSON.parse refuses: ${scanned}`,
              );
            },
          ),
          { numRuns: 25 },
        );
      });

      it("a 0-byte state object reads as no state (STATE_NOT_FOUND), like a missing one", async () => {
        const props = await target.setup({ locks });
        await (await writer(props)).writeState("default", "");
        const e = await rejectsWith(remote(props, { defaults: { a: 1 } }).fetchOutputs(fetchOptions), "STATE_NOT_FOUND");
        assert.equal(e.message, `no stored state for workspace default at ${props.bucket}/env:/tool.tfstate (the object is empty)`);
      });

      it("states of format versions 1 to 3 give the root module's outputs, as the tool reads them", async () => {
        const props = await target.setup({ locks });
        const w = await writer(props);
        const read = async (state: unknown, scanThreshold: number): Promise<{ json: unknown; sensitive: string[] }> => {
          await w.writeState("default", JSON.stringify(state, null, 2));
          const out = await remote(props, { defaults: { d: "default" } }).fetchOutputs({ ...fetchOptions, scanThreshold });
          return { json: out.toJSON(), sensitive: out.names().filter((n) => out.isSensitive(n)) };
        };
        const v1 = {
          version: 1,
          serial: 1,
          modules: [
            { path: ["root"], outputs: { ip: "10.0.0.1", d: "state" }, resources: {} },
            { path: ["root", "child"], outputs: { inner: "x" } },
          ],
        };
        const v1NoPath = { version: 1, serial: 1, modules: [{ outputs: { ip: "10.0.0.2" } }] };
        const v2 = {
          version: 2,
          lineage: "l",
          serial: 1,
          modules: [
            {
              path: ["root"],
              outputs: { ip: { sensitive: false, type: "string", value: "10.0.0.3" }, pw: { sensitive: true, type: "string", value: "s3cret" } },
            },
          ],
        };
        const v3 = {
          version: 3,
          terraform_version: "0.11.14",
          serial: 7,
          lineage: "l",
          modules: [
            { path: ["root", "net"], outputs: { vpc: { sensitive: false, type: "string", value: "inner" } } },
            {
              path: ["root"],
              outputs: {
                ids: { sensitive: false, type: "list", value: ["a", "b"] },
                tags: { sensitive: false, type: "map", value: { k: "v" } },
                bare: "plain",
              },
              resources: {},
            },
          ],
        };
        for (const scanThreshold of [0, Infinity]) {
          assert.deepEqual(await read(v1, scanThreshold), { json: { d: "state", ip: "10.0.0.1" }, sensitive: [] });
          assert.deepEqual(await read(v1NoPath, scanThreshold), { json: { d: "default", ip: "10.0.0.2" }, sensitive: [] });
          assert.deepEqual(await read(v2, scanThreshold), { json: { d: "default", ip: "10.0.0.3", pw: "s3cret" }, sensitive: ["pw"] });
          assert.deepEqual(await read(v3, scanThreshold), { json: { d: "default", ids: ["a", "b"], tags: { k: "v" }, bare: "plain" }, sensitive: [] });
          assert.deepEqual(await read({ version: 3, modules: null }, scanThreshold), { json: { d: "default" }, sensitive: [] });
          assert.deepEqual(await read({ version: 3, modules: [{ path: ["root"], outputs: null }] }, scanThreshold), { json: { d: "default" }, sensitive: [] });
        }
      });

      it("toolType: the type a format-4 state records; implied from the value for defaults and untyped outputs; as the tool's upgrade for formats 1 to 3", async () => {
        const props = await target.setup({ locks });
        const w = await writer(props);
        const types = async (state: string, scanThreshold: number, defaults?: Record<string, unknown>): Promise<Record<string, unknown>> => {
          await w.writeState("default", state);
          const out = await remote(props, defaults === undefined ? {} : { defaults }).fetchOutputs({ ...fetchOptions, scanThreshold });
          return Object.fromEntries(out.names().map((n) => [n, out.toolType(n)]));
        };
        const v4 =
          '{"version": 4, "outputs": {"set": {"value": ["a"], "type": ["set", "string"]}, "untyped": {"value": {"b": [1, "x"], "a": null}}, "n": {"value": 1e400, "type": "number"}}}';
        const v3 = JSON.stringify({
          version: 3,
          modules: [
            {
              path: ["root"],
              outputs: {
                l: { type: "list", value: ["a", "b"] },
                m: { type: "map", value: { k: ["x"], j: ["y"] } },
                mixed: { type: "list", value: ["a", 1] },
                empty: { type: "list", value: [] },
                bare: "b",
              },
            },
          ],
        });
        for (const scanThreshold of [0, Infinity]) {
          assert.deepEqual(await types(v4, scanThreshold, { d: [true, 1.5], set: "default" }), {
            d: ["tuple", ["bool", "number"]],
            n: "number",
            set: ["set", "string"],
            untyped: ["object", { a: "dynamic", b: ["tuple", ["number", "string"]] }],
          });
          assert.deepEqual(await types(v3, scanThreshold), {
            bare: "string",
            empty: ["tuple", []],
            l: ["list", "string"],
            m: ["map", ["list", "string"]],
            mixed: ["tuple", ["string", "number"]],
          });
        }
        // A value nested as deep as the tool allows has a type as deep: no recursion.
        const levels = 10_000 - 5;
        await w.writeState("default", `{"version": 3, "modules": [{"path": ["root"], "outputs": {"deep": ${"[".repeat(levels)}"x"${"]".repeat(levels)}}}]}`);
        const out = await remote(props).fetchOutputs(fetchOptions);
        assert.equal(out.toolTypeText("deep"), `${'["list",'.repeat(levels)}"string"${"]".repeat(levels)}`);
        assert.throws(
          () => out.toolType("zz"),
          (e: unknown) => isObjstateError(e, "OUTPUT_NOT_FOUND"),
        );
      });

      it("numbers are exact: 12345678901234567890, 1e400 and 1e-400 as written, on both paths", async () => {
        const props = await target.setup({ locks });
        const state =
          '{"version": 4, "outputs": {"big": {"value": 12345678901234567890, "type": "number"}, "huge": {"value": 1e400, "type": "number"}, "tiny": {"value": 1e-400, "type": "number"}, "list": {"value": [1.5, 12345678901234567890], "type": ["list", "number"]}}}';
        await (await writer(props)).writeState("default", state);
        for (const scanThreshold of [0, Infinity]) {
          const out = await remote(props).fetchOutputs({ ...fetchOptions, scanThreshold });
          assert.equal(out.numberText("big"), "12345678901234567890");
          assert.equal(out.bigint("big"), 12345678901234567890n);
          assert.equal(out.numberText("huge"), "1e400");
          assert.equal(out.bigint("huge"), 10n ** 400n);
          assert.equal(out.numberText("tiny"), "1e-400");
          assert.throws(
            () => out.bigint("tiny"),
            (e: unknown) => isObjstateError(e, "OUTPUT_NOT_INTEGER") && /output "tiny" \(1e-400\) is not a whole number/.test(e.message),
          );
          assert.equal(out.number("big"), Number("12345678901234567890"), "number() is the nearest JS number");
          assert.equal(out.toJSONText(), '{"big":12345678901234567890,"huge":1e400,"list":[1.5,12345678901234567890],"tiny":1e-400}');
          assert.deepEqual(
            out.toJSON(),
            { big: "12345678901234567890", huge: "1e400", tiny: "1e-400", list: [1.5, "12345678901234567890"] },
            "toJSON never rounds: inexact numbers as their text",
          );
        }
      });

      it("sensitive outputs are flagged (isSensitive); defaults and other outputs are not", async () => {
        const props = await target.setup({ locks });
        const state =
          '{"version": 4, "outputs": {"pw": {"value": "s3cret", "type": "string", "sensitive": true}, "ip": {"value": "10.0.0.1", "type": "string", "sensitive": false}, "n": {"value": 1, "type": "number"}}}';
        await (await writer(props)).writeState("default", state);
        const out = await remote(props, { defaults: { d: 1, pw: "default" } }).fetchOutputs(fetchOptions);
        assert.deepEqual(
          out.names().filter((n) => out.isSensitive(n)),
          ["pw"],
        );
        assert.equal(out.string("pw"), "s3cret");
        assert.throws(
          () => out.isSensitive("zz"),
          (e: unknown) => isObjstateError(e, "OUTPUT_NOT_FOUND"),
        );
      });

      it("values nested 10,000 levels deep (the tool's limit) are read on both paths, without overflowing the stack", async () => {
        const props = await target.setup({ locks });
        // The top-level object, "outputs" and the output's object take 3 of the 10,000 levels.
        const levels = 10_000 - 3;
        const state = `{"version": 4, "outputs": {"deep": {"type": "dynamic", "value": ${"[".repeat(levels)}7${"]".repeat(levels)}}}}`;
        await (await writer(props)).writeState("default", state);
        for (const scanThreshold of [0, Infinity]) {
          const out = await remote(props).fetchOutputs({ ...fetchOptions, scanThreshold });
          let v: unknown = out.get("deep");
          let depth = 0;
          while (Array.isArray(v)) {
            v = v[0];
            depth++;
          }
          assert.equal(depth, levels);
          assert.equal(v, 7);
          assert.equal(out.toJSONText("deep"), `${"[".repeat(levels)}7${"]".repeat(levels)}`);
          assert.ok(Object.isFrozen(out.get("deep")));
        }
        await (await writer(props)).writeState("default", state.replace('"value": [', '"value": [[').replace("7]", "7]]"));
        for (const scanThreshold of [0, Infinity]) {
          const e = await rejectsWith(remote(props).fetchOutputs({ ...fetchOptions, scanThreshold }), "STATE_INVALID");
          assert.match(e.message, /^the state of workspace default at .* cannot be read: it is nested more than 10000 levels deep/);
        }
      });

      it("large states: only the outputs are picked out (scan), with the same answer as a full parse", async () => {
        const props = await target.setup({ locks });
        const resources = Array.from({ length: 8000 }, (_, i) => ({
          mode: "managed",
          type: "t_res",
          name: `r${i}`,
          instances: [{ attributes: { id: `id-${i}`, outputs: { value: "decoy" }, text: 'quote " brace } bracket ] "outputs": x' }, private: "x".repeat(100) }],
        }));
        const state = [
          '{"version": 4, "out\\u0070uts": {"early": {"value": "overwritten"}},',
          `"resources": ${JSON.stringify(resources, null, 2)},`,
          `"outputs": ${JSON.stringify({ vpc_id: { value: "vpc-big", type: "string" }, ids: { value: [1, 2, 3], type: ["list", "number"] } })}}`,
        ].join("\n");
        assert.ok(state.length > DEFAULT_SCAN_THRESHOLD, `state is ${state.length} bytes`);
        await (await writer(props)).writeState("default", state);
        const scanned = await remote(props, { defaults: { early: "default" } }).fetchOutputs(fetchOptions);
        assert.equal(scanned.source.method, "scan");
        assert.deepEqual(
          scanned.toJSON(),
          { early: "default", vpc_id: "vpc-big", ids: [1, 2, 3] },
          "the last of two outputs members wins; nested ones are ignored",
        );
        const parsed = await remote(props, { defaults: { early: "default" } }).fetchOutputs({ ...fetchOptions, scanThreshold: Infinity });
        assert.equal(parsed.source.method, "parse");
        assert.deepEqual(parsed.toJSON(), scanned.toJSON());
        await (await writer(props)).writeState("default", stateWith({ small: 1 }));
        assert.equal((await remote(props).fetchOutputs(fetchOptions)).source.method, "parse", "small states are parsed whole");
      });

      it("passes env through: endpoint (and credentials) from the environment", async () => {
        const props = await target.setup({ locks });
        await (await writer(props)).writeState("default", stateWith({ from: "env" }));
        const { endpoint, accessKey, secretKey, ...rest } = props;
        const env: Record<string, string> = { PROVIDER_OBJECT_STORE_ENDPOINT: endpoint as string };
        if (typeof accessKey === "string") env["PROVIDER_ACCESS_KEY"] = accessKey;
        if (typeof secretKey === "string") env["PROVIDER_SECRET_KEY"] = secretKey;
        assert.deepEqual((await remote(rest).fetchOutputs({ ...fetchOptions, env })).toJSON(), { from: "env" });
        await rejectsWith(remote(rest).fetchOutputs({ ...fetchOptions, env: {} }), "NO_ENDPOINT");
      });

      it(
        locks ? "a state changed behind the lock table's back is DIGEST_MISMATCH" : "without a lock table a reader of outputs is not warned about writers",
        async () => {
          const props = await target.setup({ locks });
          const w = await writer(props);
          await w.writeState("default", stateWith({ a: "written" }));
          if (!locks) {
            warnings.length = 0;
            assert.deepEqual((await remote(props).fetchOutputs(fetchOptions)).toJSON(), { a: "written" });
            assert.ok(!warnings.some((x) => x.code === "OBJSTATE_NO_LOCKING"), "fetchOutputs writes nothing: no locking warning");
            return;
          }
          const raw = await target.raw(props.bucket);
          await raw.put(w.statePath("default"), Buffer.from(stateWith({ a: "edited by hand" })));
          raw.close();
          const started = Date.now();
          const e = await rejectsWith(remote(props).fetchOutputs(fetchOptions), "DIGEST_MISMATCH");
          const took = Date.now() - started;
          assert.ok(took >= FAST_DIGEST.timeoutMs - FAST_DIGEST.intervalMs && took < 5000, `retried for digestRetry's time before failing (took ${took} ms)`);
          assert.match(e.message, /does not match its digest/);
          // Writing through objstate again restores agreement.
          await w.writeState("default", stateWith({ a: "rewritten" }));
          assert.equal((await remote(props).fetchOutputs(fetchOptions)).string("a"), "rewritten");
        },
      );
    });
  }
}
