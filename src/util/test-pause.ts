/**
 * Test-only seam: `OBJSTATE_TEST_PAUSE_AT=<step>` makes this process SIGSTOP itself the first time
 * it reaches that step of a write, so a fault test can let another writer go ahead, then SIGCONT it.
 * `store-put`: `put` entered; a replacing put's `store-claimed`, `store-checked` (If-Match compared),
 * `store-renamed`, `store-released`; `store-delete-checked`; `table-checked`: a lock-table item
 * compared, its replace or delete next.
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
