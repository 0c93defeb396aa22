/**
 * Test-only seam for the fault tests: `OBJSTATE_TEST_PAUSE_AT=<step>` makes this process stop
 * itself (SIGSTOP) the first time it reaches that step of a write on the embedded store or
 * lock table (or the S3 driver's check by HEAD), so a test can freeze a writer exactly there, let another writer go ahead, and
 * resume it (SIGCONT). The variable is read once when the module loads; when it is unset,
 * {@link pauseAt} is an empty function. Never set it outside tests.
 */

/** The points of the embedded store's and lock table's write paths a test can stop at. */
export type PauseStep =
  /** `put` entered: the caller's own checks (a backend's guard read, its fencing check) are done. */
  | "store-put"
  /** A replacing `put` holds the key's claim and has checked nothing yet. */
  | "store-claimed"
  /** A replacing `put` has compared If-Match (under the claim; on S3, by a HEAD where the store ignores If-Match); the write is next. */
  | "store-checked"
  /** A replacing `put` has renamed its version in place; it still holds the claim. */
  | "store-renamed"
  /** A replacing `put` has released the claim; it has not returned yet. */
  | "store-released"
  /** A delete has compared If-Match under the claim; the object is still there. */
  | "store-delete-checked"
  /** A lock-table item's compare under its claim is done; its replace or delete is next. */
  | "table-checked";

const target = process.env["OBJSTATE_TEST_PAUSE_AT"];
let fired = false;

/** Stop this process at `step` when a test asked for it (once per process); otherwise nothing. */
export const pauseAt: (step: PauseStep) => void =
  target === undefined || target === ""
    ? () => undefined
    : (step) => {
        if (fired || step !== target) return;
        fired = true;
        process.kill(process.pid, "SIGSTOP");
      };
