/** The CLI behaviour suite on Ceph RGW (S3) + dynalite (DynamoDB API), credentials from the environment. */
import { describe } from "node:test";
import { cephTarget } from "../../support/targets.js";
import { cliSuite } from "../../unit/cli/suite.js";

describe("objstate CLI on Ceph RGW + dynalite", () => cliSuite(cephTarget));
