import { describe } from "node:test";
import { byteSourceSuite } from "../../behaviour/byte-source-suite.js";
import { embeddedTarget } from "../../support/targets.js";

describe("streamed writes (ByteSource) on the embedded store", () => byteSourceSuite(embeddedTarget));
