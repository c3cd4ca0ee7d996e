// The worker's test clock (ARCHITECTURE.md "Test seams"): `herdrTestClock(ms)` on the
// extension worker's global moves the continuity machine's clock ahead and runs what fell
// due, so a spec skips the core's stall, pace and back-off timers instead of sleeping
// through them. Only the worker's own timers move: the page's (content.js's health samples,
// its probe timeout, the fixture's streams) and the companion link's keep real time. So the
// clock moves in steps of one recovery tick, with real time between steps for the page to
// answer what fell due, and never while a spec waits on a page timer.

/** One recovery tick (ext-core continuity::RECOVERY_TICK_MS): the step the clock moves by. */
export const CLOCK_STEP_MS = 5_000;
/** Real time between two steps: what fell due reaches the page and its answer comes back. */
const SETTLE_MS = 750;

/** Moves the worker's continuity clock `ms` ahead at once; resolves to the total offset. */
export function advanceClock(worker, ms) {
  return worker.evaluate((ms) => globalThis.herdrTestClock(ms), ms);
}

/**
 * Lets `ms` of the worker's time pass — a wait of the product's own timers — moving its
 * clock ahead in steps, each followed by a short real settle, and stopping early once
 * `until()` holds. Real time counts too: the worker's clock runs on while it waits, so the
 * span is exact, never overshot. Resolves to how far it moved the clock (the offset it
 * added). The caller still asserts the outcome.
 */
export async function runClock(worker, ms, until = null) {
  const started = Date.now();
  let moved = 0;
  for (;;) {
    if (until && (await until())) return moved;
    const left = ms - moved - (Date.now() - started);
    if (left <= 0) return moved;
    const step = Math.min(CLOCK_STEP_MS, left);
    await advanceClock(worker, step);
    moved += step;
    await new Promise((resolve) => setTimeout(resolve, Math.min(SETTLE_MS, Math.max(0, ms - moved - (Date.now() - started)))));
  }
}
