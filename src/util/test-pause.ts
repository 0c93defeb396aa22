/**
 * Test-only seam for the fault tests: `OBJSTATE_TEST_PAUSE_AT=<step>` makes this process stop
 * itself (SIGSTOP) the first time it reaches that step of a write, so a test can freeze a writer
 * there, let another go ahead, and resume it (SIGCONT). Read once at load; unset, {@link pauseAt}
 * does nothing. Never set it outside tests.
 */
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

export const pauseAt: (step: PauseStep) => void =
  target === undefined || target === ""
    ? () => undefined
    : (step) => {
        if (fired || step !== target) return;
        fired = true;
        process.kill(process.pid, "SIGSTOP");
      };
