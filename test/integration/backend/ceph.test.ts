import { describe } from "node:test";
import { backendSuite } from "../../behaviour/backend-suite.js";
import { cephTarget } from "../../support/targets.js";

describe("ObjectStoreBackend on Ceph RGW + dynalite", () => backendSuite(cephTarget));
