/**
 * One embedded-store or embedded-lock-table call in a process of its own, for the pause
 * tests (test/unit/store/claim-pause.test.ts); prints its outcome as one JSON line.
 *   put ENDPOINT BUCKET KEY BODY [IFMATCH]        put (If-Match when given)
 *   delete-if-match ENDPOINT BUCKET KEY ETAG      deleteIfMatch
 *   update-if ENDPOINT TABLE ID ATTR EXPECTED SET  updateIf (SET: JSON object)
 *   put-lease ENDPOINT TABLE ID INFO EXPIRES NOW   putLease
 */
import { FileLockTable } from "../../src/lock/file.js";
import { FileDriver } from "../../src/store/file.js";
import { outcomeOf, report } from "./paused-process.js";

const [op, endpoint, place, ...rest] = process.argv.slice(2) as [string, string, string, ...string[]];
const store = (): FileDriver => new FileDriver({ bucket: place, endpoint });
const table = (): FileLockTable => new FileLockTable({ table: place, endpoint });
const arg = (i: number): string => rest[i] ?? "";

report(
  await outcomeOf(async () => {
    switch (op) {
      case "put":
        return store().put(arg(0), Buffer.from(arg(1)), rest[2] === undefined ? {} : { ifMatch: arg(2) });
      case "delete-if-match":
        return store().deleteIfMatch(arg(0), arg(1));
      case "update-if":
        return table().updateIf(arg(0), arg(1), arg(2), JSON.parse(arg(3)) as Record<string, string>);
      case "put-lease":
        return table().putLease(arg(0), arg(1), Number(arg(2)), Number(arg(3)));
      default:
        throw new Error(`unknown op ${op}`);
    }
  }),
);
