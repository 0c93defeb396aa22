import { describe } from "node:test";
import { byteSourceSuite } from "../../behaviour/byte-source-suite.js";
import { cephTarget } from "../../support/targets.js";

describe("streamed writes (ByteSource) on Ceph RGW + dynalite", () => byteSourceSuite(cephTarget));
