/**
 * `objstate output` against the real `terraform output` on the same state (issue 24): the
 * tool applies outputs of every kind with its local backend, objstate pushes that state into
 * an embedded store, and `objstate output --json --show-sensitive` must equal `terraform
 * output -json` key by key — sensitivity, type and value — and byte for byte; so must each
 * `output NAME --json` and `output NAME -raw` (the tool's spelling). A state of format 3
 * (which recorded no real types) is compared the same way, through the tool's upgrade.
 *
 * Without terraform on PATH the suite does not run and says so in one line on stderr.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runCli, type CliResult } from "../../support/cli.js";
import { announce, TERRAFORM, TerraformSandbox } from "../../support/terraform.js";

announce("output-json");

/** Outputs of every type the tool has, two of them sensitive; numbers a JS number cannot hold. */
const CONFIG = `
resource "terraform_data" "x" {
  input = "from-terraform"
}
output "string" { value = terraform_data.x.output }
output "number" { value = 42 }
output "big" { value = 12345678901234567890 }
output "fraction" { value = 0.1 }
output "negative" { value = -1.5e3 }
output "bool" { value = true }
output "list" { value = tolist(["a", "b"]) }
output "empty_list" { value = tolist([]) }
output "set" { value = toset(["b", "a"]) }
output "tuple" { value = ["a", 1, false] }
output "map" { value = tomap({ k = "v", j = "w" }) }
output "object" {
  value = { name = "x", ports = [80, 443], nested = { on = false, tags = tomap({ a = "b" }) }, markup = "<a & b>" }
}
output "empty_object" { value = {} }
output "password" {
  value     = "hunter2"
  sensitive = true
}
output "credentials" {
  value     = { user = "u", token = 123456789012345678901234567890 }
  sensitive = true
}
`;

/** A state of format 3, as Terraform 0.11 wrote it: "type" says only string, list or map. */
const FORMAT_3 = JSON.stringify({
  version: 3,
  serial: 2,
  lineage: "0b5c4e0e-0000-4000-8000-000000000003",
  terraform_version: "0.11.14",
  modules: [
    {
      path: ["root"],
      outputs: {
        s: { sensitive: false, type: "string", value: "x" },
        l: { sensitive: false, type: "list", value: ["a", "b"] },
        m: { sensitive: true, type: "map", value: { k: "v" } },
        mixed: { sensitive: false, type: "list", value: ["a", 1] },
        nested: { sensitive: false, type: "map", value: { a: ["x"], b: ["y"] } },
        unequal: { sensitive: false, type: "map", value: { a: ["x"], b: ["y", "z"] } },
        deep: { sensitive: false, type: "list", value: [[{ a: "1", b: "2" }], [{ a: "3", b: "4" }]] },
        empty: { sensitive: false, type: "list", value: [] },
        nothing: { sensitive: false, type: "string", value: null },
      },
      resources: {},
    },
  ],
});

interface Meta {
  readonly sensitive: boolean;
  readonly type: unknown;
  readonly value: unknown;
}

describe("objstate output --json against terraform output -json", { skip: TERRAFORM === undefined ? "no terraform on PATH" : false }, () => {
  let tf: TerraformSandbox;
  let store = "";
  let applied = "";
  let legacy = "";
  const settings = (): string[] => ["--bucket", "outputs", "--endpoint", `file://${store}`];
  const objstate = (args: string[], workspace: string): CliResult => {
    const r = runCli([...args, "-w", workspace, ...settings()]);
    assert.equal(r.code, 0, `objstate ${args.join(" ")}: ${r.stderr}`);
    return r;
  };

  before(async () => {
    tf = await TerraformSandbox.create();
    store = mkdtempSync(join(tmpdir(), "objstate-output-json-"));
    applied = tf.workdir("applied", { "main.tf": CONFIG });
    await tf.ok(applied, ["init", "-input=false"]);
    await tf.ok(applied, ["apply", "-input=false", "-auto-approve"]);
    // The state the tool wrote, pushed by objstate as it is.
    objstate(["state", "push", join(applied, "terraform.tfstate")], "applied");
    legacy = tf.workdir("legacy", { "v3.tfstate": FORMAT_3 });
    objstate(["state", "push", join(legacy, "v3.tfstate")], "legacy");
  });
  after(() => {
    tf.close();
    rmSync(store, { recursive: true, force: true });
  });

  /** Both listings, compared key by key (a readable failure), then as text. */
  function sameListing(ours: string, theirs: string): Record<string, Meta> {
    const mine = JSON.parse(ours) as Record<string, Meta>;
    const tool = JSON.parse(theirs) as Record<string, Meta>;
    assert.deepEqual(Object.keys(mine), Object.keys(tool), "the same outputs, in the same order");
    for (const name of Object.keys(tool)) {
      const [a, b] = [mine[name] as Meta, tool[name] as Meta];
      assert.deepEqual(Object.keys(a), ["sensitive", "type", "value"], name);
      assert.equal(a.sensitive, b.sensitive, `${name}: sensitive`);
      assert.deepEqual(a.type, b.type, `${name}: type`);
      assert.deepEqual(a.value, b.value, `${name}: value`);
    }
    // Byte for byte: numbers as the tool writes them (JSON.parse above rounds 12345678901234567890), Go's escapes of <, > and &.
    assert.equal(ours, theirs);
    return tool;
  }

  it("--json --show-sensitive is terraform output -json: sensitivity, type and value of every output, byte for byte", async () => {
    const theirs = (await tf.ok(applied, ["output", "-json"])).stdout;
    const tool = sameListing(objstate(["output", "--json", "--show-sensitive"], "applied").stdout, theirs);
    assert.equal(Object.keys(tool).length, 15, "every output of the configuration");
    assert.match(theirs, /"value": 12345678901234567890\n/, "the tool keeps the number exactly, and so must objstate");
    assert.match(theirs, /"token": 123456789012345678901234567890,\n/);
  });

  it('without --show-sensitive, only the values of sensitive outputs differ: masked as "<sensitive>"', async () => {
    const tool = JSON.parse((await tf.ok(applied, ["output", "-json"])).stdout) as Record<string, Meta>;
    const masked = JSON.parse(objstate(["output", "--json"], "applied").stdout) as Record<string, Meta>;
    for (const [name, meta] of Object.entries(tool)) {
      assert.deepEqual(masked[name], meta.sensitive ? { ...meta, value: "<sensitive>" } : meta, name);
    }
    const text = objstate(["output", "-json"], "applied").stdout;
    assert.ok(!text.includes("hunter2") && !text.includes("123456789012345678901234567890"), "no sensitive value in the masked listing");
  });

  it("output NAME --json and output NAME -raw print what terraform output -json NAME and -raw NAME print", async () => {
    const names = Object.keys(JSON.parse(readFileSync(join(applied, "terraform.tfstate"), "utf8")).outputs as object);
    for (const name of names) {
      const theirs = (await tf.ok(applied, ["output", "-json", name])).stdout;
      assert.equal(objstate(["output", name, "--json"], "applied").stdout, theirs, name);
    }
    for (const name of ["string", "number", "big", "fraction", "negative", "bool", "password"]) {
      const theirs = (await tf.ok(applied, ["output", "-raw", name])).stdout;
      assert.equal(objstate(["output", "-raw", name], "applied").stdout, theirs, name);
    }
  });

  it("a format-3 state: the types the tool's upgrade gives its outputs (lists and maps where the elements agree)", async () => {
    const theirs = (await tf.ok(legacy, ["output", "-json", "-state=v3.tfstate"])).stdout;
    const tool = sameListing(objstate(["output", "--json", "--show-sensitive"], "legacy").stdout, theirs);
    assert.deepEqual(tool["nested"]?.type, ["map", ["list", "string"]]);
    assert.deepEqual(tool["mixed"]?.type, ["tuple", ["string", "number"]]);
  });
});
