import { describe } from "node:test";
import { serverProcessSuite } from "../../behaviour/server-process-suite.js";
import { cephTarget } from "../../support/targets.js";

describe("objstate serve processes on Ceph RGW + dynalite: SIGTERM and SIGKILL", () => serverProcessSuite(cephTarget));
