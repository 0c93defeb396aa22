/** The CLI suite of versions on Ceph RGW (S3, versioning turned on by init) + dynalite. */
import { describe } from "node:test";
import { cephTarget } from "../../support/targets.js";
import { cliHistorySuite } from "../../unit/cli/history-suite.js";

describe("objstate state history / diff / rollback on Ceph RGW + dynalite", () => cliHistorySuite(cephTarget, { versionable: true }));
