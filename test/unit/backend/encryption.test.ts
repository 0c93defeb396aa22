import { describe } from "node:test";
import { encryptionSuite } from "../../behaviour/encryption-suite.js";
import { embeddedTarget } from "../../support/targets.js";

describe("state encryption on the embedded store + embedded lock table", () => encryptionSuite(embeddedTarget));
