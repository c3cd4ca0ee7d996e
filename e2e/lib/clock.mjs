// The worker's test clock (ARCHITECTURE.md "Test seams"): `herdrTestClock(ms)` on the
// extension worker's global moves the continuity machine's clock ahead and runs what fell
// due, so a spec skips the core's stall, pace and back-off timers instead of sleeping
// through them. Only the worker's own timers move: the page's (content-health.js's health samples,
// its probe timeout, the fixture's streams) and the companion link's keep real time. So the
// clock moves in steps of one recovery tick, with real time between steps for the page to
// answer what fell due, and never while a spec waits on a page timer.

import { expect } from '@playwright/test';

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
 * `until()` holds. Real time counts too: the worker's clock runs on while it waits. Each
 * step is sized in the worker, against its own clock, so no step carries the worker's time
 * past `ms` from the start (a round trip's latency cannot push it over); at the end the
 * worker's clock stands exactly `ms` ahead of where it was, and runs on at real speed.
 * Resolves to how far it moved the clock (the offset it added). The caller still asserts
 * the outcome, within the rest of its deadline.
 *
 * `step` (default one recovery tick) is the most one step moves: a longer step takes fewer
 * settles, and what falls due inside it runs at the step's end, up to `step` later in the
 * worker's time than it would have — so a chain of timers reaches its outcome later, never
 * sooner, and a deadline (the whole `ms`) can only be missed, never stretched. Only for one
 * timer with nothing on the page in between: a chain of ticks that each wait for the page
 * (recovery's stall → report → probe) needs tick-sized steps to meet its deadline.
 */
export async function runClock(worker, ms, until = null, { step: most = CLOCK_STEP_MS } = {}) {
  // The worker's continuity time at which the wait ends: its Date.now() plus its offset.
  const end = await worker.evaluate(async (ms) => Date.now() + (await globalThis.herdrTestClock(0)) + ms, ms);
  let moved = 0;
  for (;;) {
    if (until && (await until())) return moved;
    const { step, left } = await worker.evaluate(async ({ end, most }) => {
      const left = end - Date.now() - (await globalThis.herdrTestClock(0));
      const step = Math.max(0, Math.min(most, left));
      if (step > 0) await globalThis.herdrTestClock(step);
      return { step, left: left - step };
    }, { end, most });
    if (step <= 0) return moved;
    moved += step;
    await new Promise((resolve) => setTimeout(resolve, Math.min(SETTLE_MS, Math.max(0, left))));
  }
}

/** How often `runClockWithSamples` looks at the page's sample count and `until`. */
const LOOK_MS = 200;

/**
 * Like `runClock`, for waits on the page's health meters (health.spec.mjs): the worker
 * judges pressure only when a `health_sample` arrives (content-health.js posts one every 5 s of
 * real time, counted on the HUD host's `data-health-samples`), and it judges it by the
 * worker time between samples. So the clock moves once per sample, `step` ms right after
 * the page posted it: two consecutive samples lie `5 s + step` apart in worker time, and a
 * storm's callbacks per minute read at most `(5 s + step) / 5 s` times lower than in real
 * time (the fixture's storm is far above the threshold either way). Real time counts too;
 * the wait ends once `ms` of worker time have passed or `until()` holds, and resolves to
 * the offset it added. A reload starts the page's count again: any change counts as a sample.
 */
export async function runClockWithSamples(page, worker, ms, { step = CLOCK_STEP_MS, until = null } = {}) {
  const count = () => sampleCount(page);
  const start = Date.now();
  let moved = 0;
  // A read that timed out (null) is no sample: the count to compare with is a real one.
  let seen = await count();
  while (seen === null) seen = await count();
  for (;;) {
    if (until && (await until())) return moved;
    const left = ms - (Date.now() - start) - moved;
    if (left <= 0) return moved;
    const now = await count();
    if (now !== null && now !== seen) {
      seen = now;
      const by = Math.min(step, left);
      await advanceClock(worker, by);
      moved += by;
    }
    await new Promise((resolve) => setTimeout(resolve, LOOK_MS));
  }
}

/** Waits in real time until the page has posted `n` more health samples (none of the clock's doing). */
export async function realSamples(page, n) {
  let seen = await sampleCount(page);
  while (seen === null) seen = await sampleCount(page);
  for (let i = 0; i < n; i++) {
    const before = seen;
    // Only a real count that differs is a new sample; a read that timed out (null) is none.
    await expect.poll(async () => {
      const now = await sampleCount(page);
      if (now !== null) seen = now;
      return now === null ? before : now;
    }, { message: `health sample ${i + 1} of ${n} arrives`, timeout: 15_000, intervals: [LOOK_MS] }).not.toBe(before);
  }
}

/** The page's health sample count on the HUD host, or null when the read timed out. */
function sampleCount(page) {
  return page.locator('herdr-continuity-hud').getAttribute('data-health-samples', { timeout: 1_000 }).catch(() => null);
}
