import { describe } from "node:test";
import { releasedSuite } from "../../behaviour/released-suite.js";
import { cephTarget } from "../../support/targets.js";

describe("released lock IDs on Ceph RGW + dynalite", () => releasedSuite(cephTarget));
