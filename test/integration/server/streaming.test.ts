import { describe } from "node:test";
import { serverStreamingSuite } from "../../behaviour/server-streaming-suite.js";
import { cephTarget } from "../../support/targets.js";

describe("objstate serve streams large states (Ceph RGW + dynalite)", () => serverStreamingSuite(cephTarget));
