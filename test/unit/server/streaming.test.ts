import { describe } from "node:test";
import { serverStreamingSuite } from "../../behaviour/server-streaming-suite.js";
import { embeddedTarget } from "../../support/targets.js";

describe("objstate serve streams large states (embedded store)", () => serverStreamingSuite(embeddedTarget));
