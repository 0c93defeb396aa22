import { describe } from "node:test";
import { releasedSuite } from "../../behaviour/released-suite.js";
import { embeddedTarget } from "../../support/targets.js";

describe("released lock IDs on the embedded store + embedded lock table", () => releasedSuite(embeddedTarget));
