/** The CLI suite of versions on the embedded store and lock table (file: endpoints, no server). */
import { describe } from "node:test";
import { embeddedTarget } from "../../support/targets.js";
import { cliHistorySuite } from "./history-suite.js";

describe("objstate state history / diff / rollback on the embedded store", () => cliHistorySuite(embeddedTarget, { versionable: false }));
