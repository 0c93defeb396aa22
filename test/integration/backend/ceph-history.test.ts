import { describe } from "node:test";
import { historySuite, unversionedSuite } from "../../behaviour/history-suite.js";
import { cephTarget } from "../../support/targets.js";

describe("history, diff and rollback on Ceph RGW (versioned bucket) + dynalite", () => historySuite(cephTarget));
describe("history on a Ceph RGW bucket without versioning", () => unversionedSuite(cephTarget));
