/**
 * Remote-state names that are also names of Object.prototype's members: the tables keyed
 * by remote-state names (src/config/tool-json.ts) are filled without a prototype, so such
 * a name is an own key like any other, and the tables still are plain objects.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DataRemoteStateObjectStore, ObjectStoreBackendConfig, formatToolJson, mergeToolJson } from "../../../src/index.js";

const remote = (name: string): DataRemoteStateObjectStore => new DataRemoteStateObjectStore(name, { bucket: "states", key: `${name}.tfstate` });

describe("remote-state names", () => {
  it("a state named __proto__ is an own key of its document, not a prototype change", () => {
    const doc = remote("__proto__").toToolJson();
    const states = doc.data.tool_remote_state;
    assert.equal(Object.getPrototypeOf(states), Object.prototype);
    assert.deepEqual(Object.keys(states), ["__proto__"]);
    assert.match(formatToolJson(doc), /"__proto__": \{\n\s+"backend": "objectstore"/);
    const merged = mergeToolJson(doc, remote("net").toToolJson());
    assert.deepEqual(Object.keys(merged.data?.tool_remote_state ?? {}), ["__proto__", "net"]);
  });

  it("states named toString and constructor merge (an inherited name is not taken for a duplicate)", () => {
    const merged = mergeToolJson(remote("toString").toToolJson(), remote("constructor").toToolJson());
    const states = merged.data?.tool_remote_state ?? {};
    assert.deepEqual(Object.keys(states), ["toString", "constructor"]);
    assert.equal(Object.getPrototypeOf(states), Object.prototype);
    assert.throws(() => mergeToolJson(remote("toString").toToolJson(), remote("toString").toToolJson()), {
      code: "INVALID_NAME",
      message: 'remote state "toString" is defined twice',
    });
  });

  it("the merged document keeps the order its parts came in", () => {
    const backend = ObjectStoreBackendConfig.from({ bucket: "states" }).toToolJson();
    assert.deepEqual(Object.keys(mergeToolJson(remote("net").toToolJson(), backend)), ["data", "tool"]);
    assert.deepEqual(Object.keys(mergeToolJson(backend, remote("net").toToolJson())), ["tool", "data"]);
    assert.deepEqual(mergeToolJson(remote("a").toToolJson(), remote("b").toToolJson()), {
      data: {
        tool_remote_state: {
          a: { backend: "objectstore", config: { bucket: "states", key: "a.tfstate" } },
          b: { backend: "objectstore", config: { bucket: "states", key: "b.tfstate" } },
        },
      },
    });
  });
});
