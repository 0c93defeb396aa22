import { describe } from "node:test";
import { encryptionSuite } from "../../behaviour/encryption-suite.js";
import { cephTarget } from "../../support/targets.js";

describe("state encryption on Ceph RGW (versioned bucket) + dynalite", () => encryptionSuite(cephTarget));
