import { describe } from "node:test";
import { historySuite } from "../../behaviour/history-suite.js";
import { embeddedTarget } from "../../support/targets.js";

describe("history, diff and rollback on the embedded store", () => historySuite(embeddedTarget));
