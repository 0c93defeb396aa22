/**
 * Preload (`node --import …/skewed-clock.js`) that moves this process's clock by
 * `OBJSTATE_TEST_CLOCK_SKEW_MS` milliseconds: `Date.now()`, `new Date()` and `Date()` all
 * see the shifted time, as on a machine whose system clock is off. Timers are unaffected.
 */
const skew = Number(process.env["OBJSTATE_TEST_CLOCK_SKEW_MS"] ?? "0");
const RealDate = Date;
const now = (): number => RealDate.now() + skew;

globalThis.Date = new Proxy(RealDate, {
  construct(target, args: unknown[], newTarget) {
    return Reflect.construct(target, args.length === 0 ? [now()] : args, newTarget) as object;
  },
  apply() {
    return new RealDate(now()).toString();
  },
  get(target, prop, receiver) {
    return prop === "now" ? now : (Reflect.get(target, prop, receiver) as unknown);
  },
});
