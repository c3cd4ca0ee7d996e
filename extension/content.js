// Content script: a thin adapter, never wasm (the page's CSP decides whether wasm may
// compile here, and chatgpt.com's CSP is not ours). It
//   (a) mounts the HUD in a shadow root on <herdr-continuity-hud>, a child of
//       document.documentElement (outside React's tree), once per page even if injected
//       twice;
//   (b) connects a `page` port to the service worker and reports page facts;
//   (c) renders the view models the worker sends (text via chrome.i18n.getMessage with
//       the keys and substitutions the worker chose);
//   (d) sends button presses back as actions.
// It contains no product decisions. Message shapes: docs/PROTOCOL.md,
// "Extension-internal ports".
(() => {
  const GUARD = Symbol.for('herdr-continuity.hud');
  if (globalThis[GUARD] || document.querySelector('herdr-continuity-hud')) return;
  globalThis[GUARD] = true;

  const CSS = `
    :host { all: initial; position: fixed; right: 12px; bottom: 12px; z-index: 2147483647; }
    .hud { font: 12px/1.4 system-ui, sans-serif; color: #1d1d1f; background: #fff;
      border: 1px solid #d0d7de; border-radius: 8px; padding: 8px 10px; max-width: 340px;
      box-shadow: 0 2px 8px rgba(0,0,0,.15); }
    .line { margin: 2px 0; padding-left: 6px; border-left: 3px solid #999; }
    .tone-good { border-color: #1a7f37; } .tone-pending { border-color: #9a6700; }
    .tone-warning { border-color: #bc4c00; } .tone-bad { border-color: #cf222e; }
    button { font: inherit; margin: 4px 4px 0 0; padding: 2px 8px; cursor: pointer; }
    button:focus-visible { outline: 2px solid #0969da; outline-offset: 2px; }
    .status:empty { display: none; }`;

  const host = document.createElement('herdr-continuity-hud');
  const root = host.attachShadow({ mode: 'open' });
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(CSS);
  root.adoptedStyleSheets = [sheet];
  const panel = document.createElement('section');
  panel.className = 'hud';
  panel.setAttribute('aria-label', chrome.i18n.getMessage('hudLabel'));
  const lines = document.createElement('div');
  const actions = document.createElement('div');
  const status = document.createElement('p');
  status.className = 'status';
  status.setAttribute('role', 'status');
  status.setAttribute('aria-live', 'polite');
  panel.append(lines, actions, status);
  root.append(panel);
  document.documentElement.append(host);

  const text = (key, substitutions) => chrome.i18n.getMessage(key, substitutions) || key;
  let port = null;
  let roundTripStartedAt = 0;

  const render = (view) => {
    lines.replaceChildren(...[['companion', view.companion], ['herdr', view.herdr]].map(([name, line]) => {
      const p = document.createElement('p');
      p.className = `line tone-${line.tone}`;
      p.dataset.line = name;
      p.dataset.key = line.key;
      p.textContent = text(line.key, line.substitutions);
      return p;
    }));
    actions.replaceChildren(...view.actions.map((action) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.dataset.action = action.id;
      button.textContent = text(action.label);
      button.addEventListener('click', () => {
        roundTripStartedAt = performance.now();
        port?.postMessage({ type: 'action', action: action.id });
      });
      return button;
    }));
    host.dataset.companion = view.companion.key;
    host.dataset.herdr = view.herdr.key;
  };

  const onMessage = (message) => {
    if (message?.type === 'hud') render(message.view);
    if (message?.type === 'round_trip_result') {
      status.textContent = text(message.status.key, message.status.substitutions);
      status.dataset.key = message.status.key;
      if (message.ok) {
        // Worker-measured (worker → host → runtime → worker) and page-measured totals.
        host.dataset.roundtripMs = String(message.ms);
        host.dataset.pageRoundtripMs = String(performance.now() - roundTripStartedAt);
      }
    }
  };

  // The worker may restart (MV3); reconnect the page port when it goes away. The
  // extension being reloaded or removed ends this script's context, which throws here.
  const connect = () => {
    try {
      port = chrome.runtime.connect({ name: 'page' });
    } catch {
      port = null;
      // chrome.i18n is gone with the extension context, hence the fixed English text.
      host.dataset.companion = 'extensionReloaded';
      status.textContent = 'Herdr Continuity was reloaded or updated: reload this page to reconnect.';
      return;
    }
    port.onMessage.addListener(onMessage);
    port.onDisconnect.addListener(() => {
      port = null;
      setTimeout(connect, 1000);
    });
    port.postMessage({ type: 'page_facts', url: location.href });
  };
  connect();
})();
