import { describe } from "node:test";
import { serverSuite } from "../../behaviour/server-suite.js";
import { embeddedTarget } from "../../support/targets.js";

describe("objstate serve on the embedded store, one server", () => serverSuite(embeddedTarget, 1));
describe("objstate serve on the embedded store, two replicas", () => serverSuite(embeddedTarget, 2));
