// Content script (last in manifest order): the page port — messages from the worker,
// the Queue button's wiring, and (re)connecting. The files before it are listed in
// manifest/manifest.json; content-hud.js says how they share state.
(() => {
  const hc = globalThis[Symbol.for('herdr-continuity.content')];
  if (!hc) return; // a second injection: the first copy runs
  // Port and message names: extension/contracts.js (generated from the Rust side).
  const { ports: { page: PORT }, messages: { worker_to_page: FROM_WORKER, worker_to_tab: TO_TAB } } = globalThis.herdrContracts;
  const { text, onTrusted, host, status, render, composerText, soleComposer, sendFacts, scheduleFacts, reports,
    selectContents, deliver, clearComposer, insert, showNotice, startProblem, setProfile, snapshotProbe,
    clickRetry, cardAllow } = hc;

  const onMessage = (message) => {
    if (message?.type === FROM_WORKER.profile) setProfile(message.profile);
    if (message?.type === FROM_WORKER.hud) render(message.view, message.provisional === true);
    if (message?.type === FROM_WORKER.deliver) deliver(message);
    if (message?.type === FROM_WORKER.clear_composer) clearComposer(message);
    if (message?.type === FROM_WORKER.delivery_seen) reports.delete(message.id);
    if (message?.type === FROM_WORKER.insert) insert(message.text);
    if (message?.type === FROM_WORKER.notice) showNotice(text(message.key, message.args), message.tone);
    if (message?.type === FROM_WORKER.queue_accepted) queueUi?.accepted(message.text);
    if (message?.type === FROM_WORKER.snapshot_probe) snapshotProbe(message.conversation_id);
    if (message?.type === FROM_WORKER.recovery_reload) location.reload();
    if (message?.type === FROM_WORKER.recovery_retry) clickRetry();
    if (message?.type === FROM_WORKER.card_allow) cardAllow(message);
    if (message?.type === FROM_WORKER.start_problem) startProblem(message.error, message.failed);
    if (message?.type === FROM_WORKER.round_trip_result) {
      status.textContent = text(message.status.key, message.status.substitutions);
      status.dataset.key = message.status.key;
      if (message.ok) {
        // Worker-measured (worker → host → runtime → worker) and page-measured totals.
        host.dataset.roundtripMs = String(message.ms);
        host.dataset.pageRoundtripMs = String(performance.now() - hc.roundTripStartedAt);
      }
    }
  };

  // The Queue button (queue-button.js, loaded before this script): our own element beside
  // the composer; it reads the composer this adapter found and posts through its port.
  const queueUi = globalThis[Symbol.for('herdr-continuity.queue-ui')]?.({
    text,
    onTrusted,
    guard: hc.pressGuard,
    refuse: hc.refuse,
    settleMs: hc.PRESS_SETTLE_MS,
    hud: hc.host,
    post: (message) => hc.send(message),
    composer: soleComposer,
    composerText,
    clearComposer: (el) => {
      selectContents(el);
      document.execCommand('delete');
      scheduleFacts();
    },
  }) ?? null;
  // The `queue-composer` keyboard command (chrome.commands), sent by our worker only.
  chrome.runtime.onMessage?.addListener((message, sender) => {
    if (sender.id === chrome.runtime.id && message?.type === TO_TAB.queue_request) queueUi?.request();
  });

  // The worker may restart (MV3); reconnect the page port when it goes away. The
  // extension being reloaded or removed ends this script's context, which throws here;
  // chrome.i18n is gone with it, hence its text read now.
  const reloadedText = text('pageExtensionReloaded');
  let reconnect = null;
  const connect = () => {
    clearTimeout(reconnect);
    reconnect = null;
    let port;
    try {
      port = chrome.runtime.connect({ name: PORT });
    } catch {
      hc.port = null;
      host.dataset.companion = 'extensionReloaded';
      status.textContent = reloadedText;
      return;
    }
    hc.port = port;
    port.onMessage.addListener(onMessage);
    port.onDisconnect.addListener(() => {
      if (hc.port !== port) return; // a port already replaced (hc.send connected afresh)
      hc.port = null;
      reconnect = setTimeout(connect, 1000);
    });
    hc.lastRecovery = '';
    hc.lastCards = null;
    hc.threadShape = '';
    sendFacts(true);
    // Reports the previous worker never acknowledged are told again (the worker ignores
    // ids it no longer waits for).
    for (const message of reports.values()) hc.port.postMessage(message);
  };
  // What the user did (a press, a queued message, a turn that ended) is sent now, never
  // dropped: a port that is down — Chrome stopped the idle worker, the reconnect is still a
  // second away — is connected first (the connect wakes the worker and tells it the page's
  // facts before this), and a port that went away without its disconnect event yet (its
  // `postMessage` throws) is replaced.
  hc.send = (message) => {
    if (!hc.port) connect();
    try {
      hc.port?.postMessage(message);
    } catch {
      const old = hc.port;
      hc.port = null;
      try { old?.disconnect(); } catch { /* already gone */ }
      connect();
      hc.port?.postMessage(message);
    }
  };
  connect();
  globalThis[Symbol.for('herdr-continuity.content')] = null; // the files' closures keep it
  Object.assign(hc, { queueUi });
})();
