import { describe } from "node:test";
import { serverSuite } from "../../behaviour/server-suite.js";
import { cephTarget } from "../../support/targets.js";

describe("objstate serve on Ceph RGW + dynalite, one server", () => serverSuite(cephTarget, 1));
describe("objstate serve on Ceph RGW + dynalite, two replicas", () => serverSuite(cephTarget, 2));
