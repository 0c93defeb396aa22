/** The CLI behaviour suite on the embedded store and lock table (file: endpoints, no server). */
import { describe } from "node:test";
import { embeddedTarget } from "../../support/targets.js";
import { cliSuite } from "./suite.js";

describe("objstate CLI on the embedded store", () => cliSuite(embeddedTarget));
