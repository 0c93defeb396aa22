/**
 * diffStates / formatStateDiff over small known states (formats 3 and 4), their errors, a
 * large state, and properties over random states.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { isObjstateError } from "../../../src/errors.js";
import { hclQuoted } from "../../../src/state/address.js";
import { diffStates, formatStateDiff, isEmptyStateDiff, type StateDiff } from "../../../src/state/diff.js";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

interface Inst {
  index_key?: number | string;
  deposed?: string;
  attributes?: Record<string, Json>;
  attributes_flat?: Record<string, string>;
  sensitive_attributes?: Json[];
}
interface Res {
  module?: string;
  mode?: "managed" | "data";
  type: string;
  name: string;
  instances: Inst[];
}

function v4(resources: Res[], outputs: Record<string, { value: Json; sensitive?: boolean }> = {}, serial = 1, lineage = "L1"): Record<string, Json> {
  return {
    version: 4,
    terraform_version: "1.9.0",
    serial,
    lineage,
    outputs: Object.fromEntries(
      Object.entries(outputs).map(([k, o]) => [k, { value: o.value, type: "string", ...(o.sensitive === true ? { sensitive: true } : {}) }]),
    ),
    resources: resources.map((r) => ({ mode: "managed", provider: 'provider["registry.example/x/y"]', ...r })) as unknown as Json[],
  };
}

const WEB = (n: number, ami = "ami-1"): Res => ({
  type: "aws_instance",
  name: "web",
  instances: Array.from({ length: n }, (_, i) => ({ index_key: i, attributes: { id: `i-${i}`, ami, tags: { Name: `web-${i}` } } })),
});
const SUBNETS = (keys: string[], cidr = "10.0.0.0/24"): Res => ({
  module: 'module.net["eu"].module.sub',
  type: "aws_subnet",
  name: "s",
  instances: keys.map((k) => ({ index_key: k, attributes: { id: k, cidr } })),
});
const AMI: Res = { mode: "data", type: "aws_ami", name: "ubuntu", instances: [{ attributes: { id: "ami-1", most_recent: true } }] };

const empty = (d: StateDiff): boolean => isEmptyStateDiff(d);

function stateError(f: () => unknown): Error & { code: string; message: string } {
  try {
    f();
  } catch (e) {
    assert.ok(isObjstateError(e, "STATE_INVALID"), `expected STATE_INVALID, got ${String(e)}`);
    return e;
  }
  assert.fail("expected STATE_INVALID");
}

describe("diffStates: resources", () => {
  it("adds and removes count instances, for_each instances in nested module instances, and data resources", () => {
    const a = v4([WEB(2), SUBNETS(["a", "b"])]);
    const b = v4([WEB(3), SUBNETS(["b", "c"]), AMI]);
    const d = diffStates(JSON.stringify(a), JSON.stringify(b));
    assert.deepEqual(d.resources.added, ["aws_instance.web[2]", "data.aws_ami.ubuntu", 'module.net["eu"].module.sub.aws_subnet.s["c"]']);
    assert.deepEqual(d.resources.removed, ['module.net["eu"].module.sub.aws_subnet.s["a"]']);
    assert.deepEqual(d.resources.changed, []);
    const back = diffStates(b, a);
    assert.deepEqual(back.resources.removed, d.resources.added);
    assert.deepEqual(back.resources.added, d.resources.removed);
  });

  it("names the top-level attributes that changed, in root and nested modules", () => {
    const a = v4([WEB(2), SUBNETS(["a"])]);
    const b = v4([WEB(2, "ami-2"), SUBNETS(["a"], "10.1.0.0/24")]);
    (b["resources"] as unknown as Res[])[0]!.instances[1]!.attributes!["tags"] = { Name: "renamed" };
    const d = diffStates(a, b);
    assert.deepEqual(d.resources.changed, [
      { address: "aws_instance.web[0]", attributes: ["ami"] },
      { address: "aws_instance.web[1]", attributes: ["ami", "tags"] },
      { address: 'module.net["eu"].module.sub.aws_subnet.s["a"]', attributes: ["cidr"] },
    ]);
    assert.deepEqual(d.resources.added, []);
    assert.deepEqual(d.resources.removed, []);
  });

  it("orders instances as the tool does: numbers numerically, managed before data", () => {
    const many = v4([
      { type: "t", name: "n", instances: [10, 2, 1].map((i) => ({ index_key: i, attributes: {} })) },
      { mode: "data", type: "t", name: "n", instances: [{ attributes: {} }] },
    ]);
    assert.deepEqual(diffStates(null, many).resources.added, ["t.n[1]", "t.n[2]", "t.n[10]", "data.t.n"]);
  });

  it("quotes for_each keys as HCL strings (escapes, doubled template introducers)", () => {
    assert.equal(hclQuoted('a"b\\c\n${x}%{y}$z'), '"a\\"b\\\\c\\n$${x}%%{y}$z"');
    assert.equal(hclQuoted("\u0007é😀"), '"\\u0007é😀"');
    const s = v4([{ type: "t", name: "n", instances: [{ index_key: 'k"1', attributes: {} }] }]);
    assert.deepEqual(diffStates(null, s).resources.added, ['t.n["k\\"1"]']);
  });

  it("keeps a deposed object apart from the current one", () => {
    const a = v4([{ type: "t", name: "n", instances: [{ attributes: { id: "1" } }] }]);
    const b = v4([{ type: "t", name: "n", instances: [{ attributes: { id: "2" } }, { deposed: "abcd1234", attributes: { id: "1" } }] }]);
    const d = diffStates(a, b);
    assert.deepEqual(d.resources.added, ["t.n (deposed object abcd1234)"]);
    assert.deepEqual(d.resources.changed, [{ address: "t.n", attributes: ["id"] }]);
  });

  it("names a sensitive attribute that changed but never shows its value", () => {
    const secret = (pw: string, sensitive: boolean): Record<string, Json> =>
      v4([
        {
          type: "db",
          name: "main",
          instances: [{ attributes: { id: "db", password: pw }, sensitive_attributes: sensitive ? [[{ type: "get_attr", value: "password" }]] : [] }],
        },
      ]);
    const d = diffStates(secret("hunter2", true), secret("swordfish", true));
    assert.deepEqual(d.resources.changed, [{ address: "db.main", attributes: ["password"] }]);
    const text = JSON.stringify(d) + formatStateDiff(d);
    assert.ok(!text.includes("hunter2") && !text.includes("swordfish"), text);
    // Becoming sensitive is a change of that attribute, even with the same value.
    assert.deepEqual(diffStates(secret("x", false), secret("x", true)).resources.changed, [{ address: "db.main", attributes: ["password"] }]);
  });

  it("treats an absent attribute and a null one alike, and member order as irrelevant", () => {
    const a = v4([{ type: "t", name: "n", instances: [{ attributes: { id: "1", x: null, m: { a: 1, b: [1, { c: 2 }] } } }] }]);
    const b = v4([{ type: "t", name: "n", instances: [{ attributes: { m: { b: [1, { c: 2 }], a: 1 }, id: "1" } }] }]);
    assert.ok(empty(diffStates(a, b)));
  });

  it("compares attributes nested as deep as the tool allows (10,000 levels in all) without overflowing the stack; deeper is JSON_TOO_DEEP", () => {
    const deep = (leaf: string, n = 9_990): string => `${'{"a":'.repeat(n)}"${leaf}"${"}".repeat(n)}`;
    const doc = (leaf: string): string =>
      `{"version":4,"serial":1,"lineage":"L","outputs":{"o":{"value":${deep(leaf)}}},"resources":[{"mode":"managed","type":"t","name":"n","instances":[{"attributes":{"x":${deep(leaf)}}}]}]}`;
    const d = diffStates(doc("1"), doc("2"));
    assert.deepEqual(d.resources.changed, [{ address: "t.n", attributes: ["x"] }]);
    assert.equal(d.outputs.changed.length, 1);
    assert.match(formatStateDiff(d), /~ o: \{"a":\{"a":.*…/);
    assert.throws(() => diffStates(doc("1"), `{"version":4,"outputs":{"o":{"value":${deep("2", 10_000)}}}}`), { code: "JSON_TOO_DEEP" });
  });
});

describe("diffStates: outputs", () => {
  it("lists outputs added, removed and changed with their values", () => {
    const a = v4([], { keep: { value: "same" }, gone: { value: 1 }, moved: { value: ["a"] } });
    const b = v4([], { keep: { value: "same" }, moved: { value: ["a", "b"] }, fresh: { value: { k: true } } });
    const d = diffStates(a, b);
    assert.deepEqual(d.outputs, {
      added: [{ name: "fresh", value: { k: true }, sensitive: false }],
      removed: [{ name: "gone", value: 1, sensitive: false }],
      changed: [{ name: "moved", before: ["a"], after: ["a", "b"], sensitive: false }],
    });
  });

  it("shows a sensitive output as <sensitive> when it is sensitive on either side", () => {
    const a = v4([], {
      pw: { value: "old-secret", sensitive: true },
      flip: { value: "was-secret", sensitive: true },
      flop: { value: "now-secret-1" },
      gone: { value: "gone-secret", sensitive: true },
    });
    const b = v4([], {
      pw: { value: "new-secret", sensitive: true },
      flip: { value: "was-secret-2" },
      flop: { value: "now-secret-2", sensitive: true },
      fresh: { value: "fresh-secret", sensitive: true },
    });
    const d = diffStates(a, b);
    assert.deepEqual(d.outputs.changed, [
      { name: "flip", before: "<sensitive>", after: "<sensitive>", sensitive: true },
      { name: "flop", before: "<sensitive>", after: "<sensitive>", sensitive: true },
      { name: "pw", before: "<sensitive>", after: "<sensitive>", sensitive: true },
    ]);
    assert.deepEqual(d.outputs.added, [{ name: "fresh", value: "<sensitive>", sensitive: true }]);
    assert.deepEqual(d.outputs.removed, [{ name: "gone", value: "<sensitive>", sensitive: true }]);
    const text = JSON.stringify(d) + formatStateDiff(d) + formatStateDiff(diffStates(b, a));
    assert.ok(!/secret/.test(text.replace(/<sensitive>/g, "")), text);
  });

  it("compares output numbers exactly as written, by value", () => {
    const doc = (v: string): string => `{"version":4,"serial":1,"lineage":"L","outputs":{"n":{"value":${v},"type":"number"}},"resources":[]}`;
    const d = diffStates(doc("12345678901234567890"), new TextEncoder().encode(doc("12345678901234567891")));
    // A JS number cannot hold either: each is its literal text.
    assert.deepEqual(d.outputs.changed, [{ name: "n", before: "12345678901234567890", after: "12345678901234567891", sensitive: false }]);
    assert.match(formatStateDiff(d), /~ n: "12345678901234567890" → "12345678901234567891"/);
    assert.deepEqual(
      diffStates(doc("[1e400]"), doc("[1e401]")).outputs.changed.map((c) => [c.before, c.after]),
      [[["1e400"], ["1e401"]]],
    );
    // The same value written two ways is no change; a JS-exact number stays a number.
    assert.ok(empty(diffStates(doc('{"a":1.0}'), doc('{"a":1e0}'))));
    assert.ok(empty(diffStates(doc("100"), { version: 4, outputs: { n: { value: 100 } } })));
    assert.deepEqual(diffStates(doc("1"), doc("2.5")).outputs.changed, [{ name: "n", before: 1, after: 2.5, sensitive: false }]);
  });

  it("result values are plain JSON even from a caller's object (no undefined members)", () => {
    const b = { version: 4, serial: 2, lineage: "L", outputs: { o: { value: { a: undefined, b: 1, c: [undefined] } } }, resources: [] };
    const d = diffStates(null, b);
    assert.deepEqual(d.outputs.added, [{ name: "o", value: { b: 1, c: [null] }, sensitive: false }]);
    assert.equal(JSON.stringify(JSON.parse(JSON.stringify(d))), JSON.stringify(d));
  });
});

describe("diffStates: sides", () => {
  it("null, an empty text or zero bytes is no state", () => {
    const s = v4([WEB(1)], { o: { value: "v" } }, 7, "LIN");
    const d = diffStates(null, s);
    assert.deepEqual(d.resources.added, ["aws_instance.web[0]"]);
    assert.deepEqual(d.outputs.added, [{ name: "o", value: "v", sensitive: false }]);
    assert.deepEqual(d.serial, { before: null, after: 7 });
    assert.deepEqual(d.lineage, { before: null, after: "LIN" });
    const r = diffStates(new TextEncoder().encode(JSON.stringify(s)), new Uint8Array(0));
    assert.deepEqual(r.resources.removed, ["aws_instance.web[0]"]);
    assert.deepEqual(r.serial, { before: 7, after: null });
    assert.ok(empty(diffStates(null, "")));
  });

  it("identical states (bytes, text or object) give an empty diff", () => {
    const s = v4([WEB(2), SUBNETS(["a"]), AMI], { o: { value: 1 }, p: { value: "x", sensitive: true } }, 3);
    const text = JSON.stringify(s, null, 2);
    for (const d of [diffStates(s, s), diffStates(text, new TextEncoder().encode(JSON.stringify(s))), diffStates(new Uint8Array(Buffer.from(text)), s)]) {
      assert.ok(empty(d));
      assert.deepEqual(d.serial, { before: 3, after: 3 });
    }
  });

  it("a format 3 state and the same content in format 4 (upgraded flatmap or JSON attributes) have no resource changes", () => {
    const v3 = {
      version: 3,
      terraform_version: "0.11.14",
      serial: 9,
      lineage: "L1",
      modules: [
        {
          path: ["root"],
          outputs: { ip: { sensitive: false, type: "string", value: "10.0.0.1" }, pw: { sensitive: true, type: "string", value: "s3cret" } },
          resources: {
            "aws_instance.web.0": {
              type: "aws_instance",
              primary: {
                id: "i-0",
                attributes: { id: "i-0", ami: "ami-1", "tags.%": "1", "tags.Name": "w", "sg.#": "2", "sg.0": "a", "sg.1": "b", count: "3", on: "true" },
              },
            },
            "aws_instance.web.1": { type: "aws_instance", primary: { id: "i-1", attributes: { id: "i-1", ami: "ami-1" } } },
            "data.aws_ami.ubuntu": { type: "aws_ami", primary: { id: "ami-1", attributes: { id: "ami-1" } } },
          },
        },
        {
          path: ["root", "net"],
          outputs: { inner: { type: "string", value: "not a root output" } },
          resources: { "aws_vpc.main": { type: "aws_vpc", primary: { id: "vpc-1", attributes: { id: "vpc-1", cidr_block: "10.0.0.0/16" } } } },
        },
      ],
    };
    const flat = (id: string, attrs: Record<string, string>): Inst => ({ index_key: Number(id.slice(2)), attributes_flat: attrs });
    const upgraded = v4(
      [
        {
          type: "aws_instance",
          name: "web",
          instances: [
            flat("i-0", v3.modules[0]!.resources["aws_instance.web.0"]!.primary.attributes as Record<string, string>),
            flat("i-1", { id: "i-1", ami: "ami-1" }),
          ],
        },
        { mode: "data", type: "aws_ami", name: "ubuntu", instances: [{ attributes_flat: { id: "ami-1" } }] },
        { module: "module.net", type: "aws_vpc", name: "main", instances: [{ attributes_flat: { id: "vpc-1", cidr_block: "10.0.0.0/16" } }] },
      ],
      { ip: { value: "10.0.0.1" }, pw: { value: "s3cret", sensitive: true } },
      10,
    );
    const json = v4(
      [
        {
          type: "aws_instance",
          name: "web",
          instances: [
            { index_key: 0, attributes: { id: "i-0", ami: "ami-1", tags: { Name: "w" }, sg: ["a", "b"], count: 3, on: true, gone: null } },
            { index_key: 1, attributes: { id: "i-1", ami: "ami-1" } },
          ],
        },
        { mode: "data", type: "aws_ami", name: "ubuntu", instances: [{ attributes: { id: "ami-1" } }] },
        { module: "module.net", type: "aws_vpc", name: "main", instances: [{ attributes: { id: "vpc-1", cidr_block: "10.0.0.0/16" } }] },
      ],
      { ip: { value: "10.0.0.1" }, pw: { value: "s3cret", sensitive: true } },
    );
    for (const other of [upgraded, json]) {
      const d = diffStates(JSON.stringify(v3), other);
      assert.ok(empty(d), JSON.stringify(d));
      assert.ok(empty(diffStates(other, v3)));
    }
    // A real change across formats is still seen, by top-level name.
    const changedJson = structuredClone(json);
    ((changedJson["resources"] as unknown as Res[])[0]!.instances[0]!.attributes!["tags"] as Record<string, Json>)["Name"] = "x";
    assert.deepEqual(diffStates(v3, changedJson).resources.changed, [{ address: "aws_instance.web[0]", attributes: ["tags"] }]);
  });

  it("reads format 1 outputs (bare strings) and v3 deposed objects", () => {
    const v1 = {
      version: 1,
      serial: 1,
      modules: [
        {
          path: ["root"],
          outputs: { a: "x" },
          resources: { "t.n": { primary: { id: "1", attributes: { id: "1" } }, deposed: [{ id: "0", attributes: { id: "0" } }] } },
        },
      ],
    };
    const d = diffStates(null, v1);
    assert.deepEqual(d.outputs.added, [{ name: "a", value: "x", sensitive: false }]);
    assert.deepEqual(d.resources.added, ["t.n", "t.n (deposed object 0)"]);
  });
});

describe("diffStates: bad input", () => {
  const good = JSON.stringify(v4([WEB(1)]));
  it("invalid JSON is STATE_INVALID naming the side with line and column, never quoting the text", () => {
    const bad = '{\n  "version": 4,\n  "lineage": "TOPSECRETVALUE" "serial": 1\n}';
    const from = stateError(() => diffStates(bad, good));
    assert.match(from.message, /^the 'from' state is not valid JSON: .* at line 3, column \d+$/);
    assert.ok(!from.message.includes("TOPSECRET"), from.message);
    const to = stateError(() => diffStates(good, new TextEncoder().encode(bad)));
    assert.match(to.message, /^the 'to' state is not valid JSON: .* at line 3, column \d+$/);
    assert.ok(!to.message.includes("TOPSECRET"));
    const truncated = stateError(() => diffStates(good, '{"version": 4, "outputs": {"pw": {"value": "hunter2'));
    assert.match(truncated.message, /^the 'to' state is not valid JSON/);
    assert.ok(!truncated.message.includes("hunter2"));
    assert.match(stateError(() => diffStates("\ufeff{}", null)).message, /byte-order mark/);
  });

  it("a document that is not a state, or of an unknown format, is STATE_INVALID naming the side", () => {
    assert.match(stateError(() => diffStates("[1]", good)).message, /^the 'from' state is not a state/);
    assert.match(stateError(() => diffStates(good, { serial: 1 })).message, /^the 'to' state has no format "version"/);
    assert.match(stateError(() => diffStates(good, { version: 5 })).message, /^the 'to' state has format version 5, which objstate cannot read/);
    assert.match(stateError(() => diffStates({ version: 4, resources: {} }, good)).message, /^the 'from' state has "resources" that is not a list/);
    assert.match(stateError(() => diffStates({ version: 4, resources: [{ type: "t" }] }, good)).message, /resources\[0\] that is not a resource/);
    assert.match(
      stateError(() => diffStates({ version: 4, resources: [{ type: "t", name: "n", instances: [{ index_key: true }] }] }, good)).message,
      /index_key/,
    );
    assert.match(
      stateError(() => diffStates({ version: 3, modules: [{ path: ["root"], resources: { "not a key": {} } }] }, good)).message,
      /^the 'from' state has a resource key in modules\[0\]/,
    );
  });
});

describe("formatStateDiff", () => {
  it("prints sections, a summary and JSON values, cutting long ones", () => {
    const a = v4([WEB(2), SUBNETS(["a"])], { keep: { value: 1 }, gone: { value: "bye" }, ch: { value: "x" } }, 4);
    const b = v4([WEB(1, "ami-2"), SUBNETS(["a", "b"])], { keep: { value: 1 }, ch: { value: "y" }, long: { value: "z".repeat(200) } }, 5);
    const text = formatStateDiff(diffStates(a, b));
    assert.equal(
      text,
      [
        "Serial: 4 → 5",
        "Resources:",
        '  + module.net["eu"].module.sub.aws_subnet.s["b"]',
        "  - aws_instance.web[1]",
        "  ~ aws_instance.web[0] (ami)",
        "Outputs:",
        `  + long = "${"z".repeat(78)}…`,
        '  - gone = "bye"',
        '  ~ ch: "x" → "y"',
        "1 added, 1 changed, 1 removed; outputs: 1 added, 1 changed, 1 removed",
        "",
      ].join("\n"),
    );
  });

  it("says plainly when nothing changed, and names a lineage change", () => {
    const s = v4([WEB(1)]);
    assert.equal(formatStateDiff(diffStates(s, s)), "No changes: both states have the same resources and outputs.\n");
    assert.equal(formatStateDiff(diffStates(null, null)), "No changes: both states have the same resources and outputs.\n");
    assert.match(formatStateDiff(diffStates(s, v4([WEB(1)], {}, 1, "L2"))), /^Lineage: L1 → L2 .*\nNo changes/);
  });

  it("colours with ANSI only when asked, and escapes control characters from the state", () => {
    const d = diffStates(null, v4([WEB(1)], { "evil\u001b[2J": { value: "v" } }));
    const plain = formatStateDiff(d);
    assert.ok(!plain.includes("\u001b"), JSON.stringify(plain));
    assert.match(plain, /\+ evil\\x1b\[2J = "v"/);
    const coloured = formatStateDiff(d, { color: true });
    assert.ok(coloured.includes("\u001b[32m  + aws_instance.web[0]\u001b[0m"));
  });
});

describe("diffStates: a large state", () => {
  it("diffs two ~64 MiB states in bounded time", { timeout: 120_000 }, () => {
    const instances = (n: number, salt: string): string => {
      const parts: string[] = [];
      for (let i = 0; i < n; i++)
        parts.push(`{"index_key":${i},"attributes":{"id":"i-${i}","ami":"ami-${i % 7 === 0 ? salt : "x"}","blob":"${"b".repeat(400)}","tags":{"n":"${i}"}}}`);
      return parts.join(",");
    };
    const doc = (salt: string, extra: number): Uint8Array =>
      Buffer.from(
        `{"version":4,"serial":1,"lineage":"L","outputs":{},"resources":[{"mode":"managed","type":"t","name":"n","instances":[${instances(140_000 + extra, salt)}]}]}`,
      );
    const a = doc("a", 0);
    const b = doc("b", 1);
    assert.ok(a.length > 64 * 1024 * 1024, String(a.length));
    const started = performance.now();
    const d = diffStates(a, b);
    const ms = performance.now() - started;
    assert.deepEqual(d.resources.added, ["t.n[140000]"]);
    assert.equal(d.resources.changed.length, 20_000);
    assert.ok(ms < 60_000, `${ms} ms`);
  });
});

describe("diffStates: properties", () => {
  const keyArb = fc.oneof(fc.constant(undefined), fc.nat(20), fc.string({ maxLength: 4 }));
  const valueArb = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>;
  const resArb = fc.record({
    module: fc.constantFrom("", "module.a", 'module.a["k"].module.b'),
    mode: fc.constantFrom("managed" as const, "data" as const),
    type: fc.constantFrom("t", "u"),
    name: fc.constantFrom("x", "y"),
    instances: fc.array(fc.record({ index_key: keyArb, attributes: fc.dictionary(fc.constantFrom("id", "a", "b"), valueArb) }), { maxLength: 4 }),
  });
  const stateArb = fc
    .record({
      resources: fc.array(resArb, { maxLength: 5 }),
      outputs: fc.dictionary(fc.constantFrom("o1", "o2", "o3"), fc.record({ value: valueArb, sensitive: fc.boolean() })),
    })
    .map(({ resources, outputs }) =>
      v4(resources.map((r) => ({ ...r, instances: r.instances.map((i) => (i.index_key === undefined ? { attributes: i.attributes } : i)) })) as Res[], outputs),
    );

  it("diff(a, a) is empty; swapping the arguments swaps added and removed and before and after", () => {
    fc.assert(
      fc.property(stateArb, stateArb, (a, b) => {
        assert.ok(empty(diffStates(a, JSON.stringify(a))));
        const d = diffStates(a, b);
        const r = diffStates(b, a);
        assert.deepEqual(r.resources.added, d.resources.removed);
        assert.deepEqual(r.resources.removed, d.resources.added);
        assert.deepEqual(r.resources.changed, d.resources.changed);
        assert.deepEqual(r.outputs.added, d.outputs.removed);
        assert.deepEqual(r.outputs.removed, d.outputs.added);
        assert.deepEqual(
          r.outputs.changed,
          d.outputs.changed.map((c) => ({ ...c, before: c.after, after: c.before })),
        );
        assert.deepEqual(JSON.parse(JSON.stringify(d)), d);
      }),
      { numRuns: 300 },
    );
  });
});
