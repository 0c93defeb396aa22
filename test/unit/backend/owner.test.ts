import { describe } from "node:test";
import { ownerSuite } from "../../behaviour/owner-suite.js";
import { embeddedTarget } from "../../support/targets.js";

describe("lock owners and principals on the embedded store + embedded lock table", () => ownerSuite(embeddedTarget));
