/**
 * Test-only seam for the fault tests: `OBJSTATE_TEST_PAUSE_AT=<step>` makes this process stop
 * itself (SIGSTOP) the first time it reaches that step of a write, so a test can freeze a writer
 * there, let another go ahead, and resume it (SIGCONT). Read once at load; unset, {@link pauseAt}
 * does nothing. Never set it outside tests.
 */
/**
 * `store-put`: `put` entered, the caller's own checks done; a replacing put's `store-claimed`
 * (holding the key's claim), `store-checked` (If-Match compared, under the claim or on S3 by a
 * HEAD), `store-renamed` (in place, claim held), `store-released`; `store-delete-checked`: a
 * delete compared If-Match; `table-checked`: a lock-table item compared, its replace or delete next.
 */
export type PauseStep = "store-put" | "store-claimed" | "store-checked" | "store-renamed" | "store-released" | "store-delete-checked" | "table-checked";

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
