import { describe } from "node:test";
import { ownerSuite } from "../../behaviour/owner-suite.js";
import { cephTarget } from "../../support/targets.js";

describe("lock owners and principals on Ceph RGW + dynalite", () => ownerSuite(cephTarget));
