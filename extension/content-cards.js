// Content script: permission cards — what each card asks and its buttons, sent as facts;
// the worker's `card_allow` pressed on the card it names.
(() => {
  const hc = globalThis[Symbol.for('herdr-continuity.content')];
  if (!hc) return; // a second injection: the first copy runs
  const { caps: CAPS, messages: { page_to_worker: TO_WORKER } } = globalThis.herdrContracts; // extension/contracts.js
  const { host, pageLoad, queryAll, matches, closest, hasLabel, isDisabled, observe, messageId, scheduleFacts,
    signatureOf } = hc;
  // ---- Permission cards (docs/PROTOCOL.md "Permission cards", SPEC M5): what each card
  // in the last turns shows — its wording outside the buttons, each button's label and
  // state, a key — and the one click the worker may order. Read only while the profile's
  // `permission_card` fact holds. Whether a card is allowed is decided in the worker.
  const CARD_MAX = CAPS.cards; // ext-core permission_card::MAX_CARDS
  const CARD_BUTTONS_MAX = CAPS.card_buttons; // MAX_CARD_BUTTONS (a card with more is sent with none)
  const CARD_WORDING_MAX = CAPS.card_wording_chars; // MAX_WORDING_CHARS
  const CARD_LABEL_MAX = CAPS.card_label_chars; // MAX_BUTTON_LABEL_CHARS
  const CARD_BUTTON_KEYS = ['allow', 'deny', 'card_allow'];
  const CARD_SKIP = 'button, [role="button"], [role="menu"], [role="menuitem"], script, style';
  hc.lastCards = null; // the JSON last sent; null: nothing sent on this port
  const collapse = (value) => value.replace(/\s+/g, ' ').trim();
  // A card's text outside its buttons (and menus), in document order, bounded.
  const wordingOf = (card) => {
    const parts = [];
    let length = 0;
    const walker = document.createTreeWalker(card, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node && length < CARD_WORDING_MAX; node = walker.nextNode()) {
      if (closest(node.parentElement, CARD_SKIP)) continue;
      const part = collapse(node.nodeValue || '');
      if (part) { parts.push(part); length += part.length + 1; }
    }
    return parts.join(' ').slice(0, CARD_WORDING_MAX);
  };
  // Never past a message body, a message or a turn: the card's own box, not the reply.
  const messageBoundary = (view, node) => ['turn', 'user', 'assistant', 'assistant_body'].some((fact) =>
    view.facts[fact].some((probe) => matches(node, probe.css) || (() => { try { return node.querySelector(probe.css) !== null; } catch { return true; } })()));
  // The card of a labelled button: the nearest ancestor with wording of its own.
  const cardOf = (view, button) => {
    for (let node = button.parentElement, i = 0; node && i < 5; node = node.parentElement, i++) {
      if (messageBoundary(view, node)) return null;
      if (wordingOf(node) !== '') return node;
    }
    return null;
  };
  const cardButtonFacts = (view, el) => ({
    label: collapse(el.getAttribute('aria-label') || el.getAttribute('title') || el.textContent || '').slice(0, CARD_LABEL_MAX),
    enabled: !isDisabled(view, el) && el.getAttribute('aria-disabled') !== 'true',
    visible: !closest(el, '[hidden], [aria-hidden="true"]') && el.checkVisibility?.({ visibilityProperty: true }) !== false,
    opens_menu: (el.hasAttribute('aria-haspopup') && el.getAttribute('aria-haspopup') !== 'false') || el.hasAttribute('aria-expanded'),
  });
  // Every card in the last turns: { facts, buttons }. Its key is the id of the user message
  // it answers (stable across re-renders, reloads and a worker restart; this page load's id
  // when the message has none), its wording's signature and its place among the cards with
  // that wording there.
  const readCards = (seen) => {
    const view = seen.view;
    const scopes = seen.ctx.tail.length ? seen.ctx.tail : [document];
    const cards = [];
    for (const scope of scopes) {
      for (const button of queryAll(scope, 'button')) {
        if (!CARD_BUTTON_KEYS.some((key) => hasLabel(view, button, key))) continue;
        const card = cardOf(view, button);
        if (card && !cards.includes(card)) cards.push(card);
      }
    }
    const users = seen.users.list;
    const seenKeys = new Map();
    return cards.slice(0, CARD_MAX).map((card) => {
      const wording = wordingOf(card);
      const user = users.findLast((u) => u.compareDocumentPosition(card) & Node.DOCUMENT_POSITION_FOLLOWING);
      const stem = `${(user && messageId(view, user)) || pageLoad}`.slice(0, 128) + `#${signatureOf(wording)}`;
      const n = seenKeys.get(stem) ?? 0;
      seenKeys.set(stem, n + 1);
      const all = queryAll(card, 'button, [role="button"]');
      const buttons = all.length > CARD_BUTTONS_MAX ? [] : all;
      return { buttons, facts: { key: `${stem}.${n}`, wording, buttons: buttons.map((el) => cardButtonFacts(view, el)) } };
    });
  };
  // Sends the cards when they changed (none: only after some were sent); returns `shown`.
  const sendCards = (seen, shown) => {
    const cards = shown ? readCards(seen).map((card) => card.facts) : [];
    const json = JSON.stringify(cards);
    if (json !== hc.lastCards && !(hc.lastCards === null && cards.length === 0)) {
      hc.lastCards = json;
      hc.port?.postMessage({ type: TO_WORKER.permission_cards, page_load: pageLoad, url: location.href, cards });
      host.dataset.cardsSent = String(Number(host.dataset.cardsSent ?? 0) + 1);
    }
    return shown;
  };
  // `card_allow {key, index}`: click that card's button only if it is still there, enabled,
  // visible, not a menu and labelled Allow; else `card_gone` (nothing is clicked).
  const cardAllow = (message) => {
    const seen = observe();
    const card = seen.unresolved === null ? readCards(seen).find((c) => c.facts.key === message.key) : null;
    const el = card?.buttons[message.index];
    const facts = card?.facts.buttons[message.index];
    const usable = el && facts.enabled && facts.visible && !facts.opens_menu && hasLabel(seen.view, el, 'allow');
    if (usable) el.click();
    hc.port?.postMessage({ type: TO_WORKER.card_result, key: String(message.key).slice(0, CAPS.id_chars), outcome: usable ? 'clicked' : 'card_gone' });
    scheduleFacts();
  };
  Object.assign(hc, { sendCards, cardAllow });
})();
