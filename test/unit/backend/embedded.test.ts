import { describe } from "node:test";
import { backendSuite } from "../../behaviour/backend-suite.js";
import { fencingSuite } from "../../behaviour/fencing-suite.js";
import { processSuite } from "../../behaviour/process-suite.js";
import { embeddedTarget } from "../../support/targets.js";

describe("ObjectStoreBackend on embedded store + embedded lock table", () => backendSuite(embeddedTarget));
describe("ObjectStoreBackend on embedded store, several processes", () => processSuite(embeddedTarget));
describe("ObjectStoreBackend on embedded store + embedded lock table: guard, fencing, repair", () => fencingSuite(embeddedTarget));
