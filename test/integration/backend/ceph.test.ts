import { describe } from "node:test";
import { backendSuite } from "../../behaviour/backend-suite.js";
import { fencingSuite } from "../../behaviour/fencing-suite.js";
import { processSuite } from "../../behaviour/process-suite.js";
import { cephTarget } from "../../support/targets.js";

describe("ObjectStoreBackend on Ceph RGW + dynalite", () => backendSuite(cephTarget));
describe("ObjectStoreBackend on Ceph RGW + dynalite, several processes", () => processSuite(cephTarget));
describe("ObjectStoreBackend on Ceph RGW + dynalite: guard, fencing, repair", () => fencingSuite(cephTarget));
