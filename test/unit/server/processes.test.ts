import { describe } from "node:test";
import { serverProcessSuite } from "../../behaviour/server-process-suite.js";
import { embeddedTarget } from "../../support/targets.js";

describe("objstate serve processes on the embedded store: SIGTERM and SIGKILL", () => serverProcessSuite(embeddedTarget));
