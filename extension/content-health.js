// Content script: page health meters (callbacks, timer drift, long tasks; SPEC H1) and
// rate-limit reports from Resource Timing (SPEC H7).
(() => {
  const hc = globalThis[Symbol.for('herdr-continuity.content')];
  if (!hc) return; // a second injection: the first copy runs
  const { caps: CAPS, messages: { page_to_worker: TO_WORKER } } = globalThis.herdrContracts; // extension/contracts.js
  const { host, pageLoad } = hc;
  // Read once (content-facts.js `clock`: the first read of an accessor global in a call costs).
  const clock = performance;
  const doc = document;

  // ---- Page health meters (SPEC H1, docs/PROTOCOL.md "Page health"). This only counts,
  // O(1) per event: the chat observer's callbacks (one increment in onRecords, no second
  // observer), the lateness of one 1 s timer (only while the page is visible: a hidden
  // tab's timers are throttled by the browser, which is no pressure of the page's), Long
  // Tasks where PerformanceObserver supports them, and the JS heap where Chromium exposes
  // performance.memory. Every HEALTH_SAMPLE_TICKS ticks it posts one health_sample. It
  // runs only while the worker's view has a health line (a watched ChatGPT conversation);
  // what the figures mean, and whether anything is done, is decided there.
  // While the facts' streaming watch runs (content-facts.js), its recheck interval fires
  // every profile `streaming_recheck_ms` anyway, and every call into the page is a cost per
  // streamed token: the meters then ride on it (`healthRide(true)` stops their own timer;
  // each tick of the interval calls `healthBeat` with its lateness, which counts a tick once
  // a tick's time has passed). Without the watch the own timer runs again.
  const HEALTH_TICK_MS = 1000;
  const HEALTH_SAMPLE_TICKS = 5;
  const meters = { callbacks: 0, driftMs: 0, longTaskMs: 0, longTasks: 0, ticks: 0, last: 0, timer: null, longTaskObserver: null, sent: 0, counted: 0,
    on: false, riding: false };
  const resetMeters = () => Object.assign(meters, { callbacks: 0, driftMs: 0, longTaskMs: 0, longTasks: 0, ticks: 0 });
  const countTick = (late) => {
    if (!doc.hidden && late > meters.driftMs) meters.driftMs = late;
    meters.ticks += 1;
    if (meters.ticks < HEALTH_SAMPLE_TICKS) return;
    const memory = clock.memory;
    hc.port?.postMessage({
      type: TO_WORKER.health_sample,
      page_load: pageLoad,
      callbacks: meters.callbacks,
      drift_ms: Math.round(meters.driftMs),
      long_task_ms: Math.round(meters.longTaskMs),
      long_tasks: meters.longTasks,
      ...(memory && { heap_used: memory.usedJSHeapSize, heap_limit: memory.jsHeapSizeLimit }),
    });
    // For the bench: samples sent and callbacks counted (data-* is outside the observer's filter).
    meters.sent += 1;
    meters.counted += meters.callbacks;
    host.dataset.healthSamples = String(meters.sent);
    host.dataset.healthCallbacks = String(meters.counted);
    resetMeters();
  };
  const healthTick = () => {
    const now = clock.now();
    const late = now - meters.last - HEALTH_TICK_MS;
    meters.last = now;
    countTick(late);
  };
  // At most one tick per beat, as a timer of their own counts one per run however late (a
  // hidden tab's timers may run once a minute); the phase is kept while the beats are on time.
  // `now`: the beat's performance.now().
  const healthBeat = (late, now) => {
    if (!meters.on || !meters.riding) return;
    if (now - meters.last < HEALTH_TICK_MS) return;
    meters.last = now - meters.last >= 2 * HEALTH_TICK_MS ? now : meters.last + HEALTH_TICK_MS;
    countTick(late);
  };
  // The own timer runs while the meters are on and do not ride on the watch's.
  const ownTimer = () => {
    const want = meters.on && !meters.riding;
    if (want === (meters.timer !== null)) return;
    if (want) {
      meters.last = performance.now();
      meters.timer = setInterval(healthTick, HEALTH_TICK_MS);
    } else {
      clearInterval(meters.timer);
      meters.timer = null;
    }
  };
  const healthRide = (riding) => {
    meters.riding = riding;
    ownTimer();
  };
  const healthWatch = (on) => {
    if (on === meters.on) return;
    meters.on = on;
    if (!on) {
      ownTimer();
      meters.longTaskObserver?.disconnect();
      meters.longTaskObserver = null;
      return;
    }
    resetMeters();
    meters.last = performance.now();
    ownTimer();
    if (globalThis.PerformanceObserver?.supportedEntryTypes?.includes('longtask')) {
      meters.longTaskObserver = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          meters.longTaskMs += entry.duration;
          meters.longTasks += 1;
        }
      });
      meters.longTaskObserver.observe({ type: 'longtask' });
    }
  };

  // ---- Rate limits (docs/PROTOCOL.md "rate_limited", SPEC H7): a 429 of the site's
  // backend, whoever fetched it (the page's own app included), seen in Resource Timing
  // (`responseStatus`), tells the worker to cool the account down. Same-origin `/backend-api/`
  // and `/api/` entries only; one report per 10 s (a burst of failed requests is one event).
  const RATE_REPORT_GAP_MS = CAPS.rate_report_gap_ms; // ext-core rate_limit::COUNT_WINDOW_MS
  let lastRateReport = -Infinity;
  const backendUrl = (name) => {
    try {
      const url = new URL(name, location.href);
      return url.origin === location.origin && (url.pathname.startsWith('/backend-api/') || url.pathname.startsWith('/api/'));
    } catch { return false; }
  };
  if (globalThis.PerformanceObserver?.supportedEntryTypes?.includes('resource')) {
    new PerformanceObserver((list) => {
      const hit = list.getEntries().some((entry) => entry.responseStatus === 429 && backendUrl(entry.name));
      const now = performance.now();
      if (!hit || now - lastRateReport < RATE_REPORT_GAP_MS) return;
      lastRateReport = now;
      hc.port?.postMessage({ type: TO_WORKER.rate_limited, page_load: pageLoad, source: 'resource_timing', retry_after_ms: null });
    }).observe({ type: 'resource', buffered: false });
  }
  Object.assign(hc, { meters, healthWatch, healthRide, healthBeat });
})();
