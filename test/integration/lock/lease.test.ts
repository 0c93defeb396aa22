import { describe } from "node:test";
import { leaseSuite } from "../../behaviour/lease-suite.js";
import { cephTarget } from "../../support/targets.js";

describe("leases, lockfiles and the lock list on Ceph RGW + dynalite", () => leaseSuite(cephTarget));
