import { describe } from "node:test";
import { leaseSuite } from "../../behaviour/lease-suite.js";
import { embeddedTarget } from "../../support/targets.js";

describe("leases, lockfiles and the lock list on the embedded store + embedded lock table", () => leaseSuite(embeddedTarget));
