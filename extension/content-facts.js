// Content script: page facts sent to the worker — App mentions, `facts()`, the quiet path
// and the streaming watch that keep the mutation observer cheap while a reply streams.
(() => {
  const hc = globalThis[Symbol.for('herdr-continuity.content')];
  if (!hc) return; // a second injection: the first copy runs
  const { caps: CAPS, messages: { page_to_worker: TO_WORKER } } = globalThis.herdrContracts; // extension/contracts.js
  const { host, pageLoad, queryAll, present, ownMarker, MARKER_USER_TURNS, composerText, squash, typed, observe,
    generatingIn, idOf, bodyOf, humanTurn, sendTurnEnded, sendThreadFacts } = hc;

  // ---- The Herdr App (docs/PROTOCOL.md "The Herdr App"; ext-core sites::AppMentions):
  // the pills of the Apps a message carries, read in user turns (`human_apps`) and in the
  // composer (the read-back before sending). A pill is `{keyword, name, path}`; fields are
  // capped as ext-core reads them, and a pill without a keyword or name is not an App.
  const APP_KEYWORD_MAX = 64;
  const APP_NAME_MAX = CAPS.id_chars;
  const APP_PATH_MAX = CAPS.id_chars; // ext-core limits: each field at most MAX_ID_CHARS
  const APPS_MAX = CAPS.app_mentions;
  const appMentions = () => hc.profile?.app_mentions ?? null;
  const pillElements = (scope) => {
    const apps = appMentions();
    if (!apps || !scope) return [];
    const out = [];
    for (const pill of apps.pills) {
      for (const el of queryAll(scope, pill.css)) if (!out.some((seen) => seen.el === el)) out.push({ el, pill });
    }
    return out;
  };
  const readPill = ({ el, pill }) => {
    const attr = (name) => (name ? (el.getAttribute(name) ?? '').trim() : '');
    const name = pill.name_attr ? attr(pill.name_attr) : (el.textContent || '').trim().replace(/^@/, '').trim();
    const keyword = pill.keyword_attr ? attr(pill.keyword_attr) : name.toLowerCase();
    const path = attr(pill.path_attr);
    if (!keyword || !name || keyword.length > APP_KEYWORD_MAX || name.length > APP_NAME_MAX || path.length > APP_PATH_MAX) return null;
    return { keyword, name, path };
  };
  const appsIn = (scope) => pillElements(scope).map(readPill).filter(Boolean).slice(0, APPS_MAX);
  // A pill is the App asked for when its keyword (case aside) is the App's, and its name
  // and path are the App's where both sides have one.
  const sameApp = (found, app) => Boolean(found) && found.keyword.toLowerCase() === String(app.keyword).toLowerCase() &&
    (!found.name || !app.name || found.name.toLowerCase() === String(app.name).toLowerCase()) &&
    (!found.path || !app.path || found.path === app.path);
  // The composer's text without its pills (what the adapter typed after the pill).
  const plainText = (composer) => {
    const pills = pillElements(composer).map(({ el }) => el);
    if (!pills.length) return composerText(composer);
    const copy = composer.cloneNode(true);
    for (const el of pillElements(copy).map(({ el: pill }) => pill)) el.remove();
    return composerText(copy);
  };
  // Whether the composer holds only what an App attempt typed. The composer was empty when
  // the attempt began (deliver requires it), so App pills are ours (a wrong one the picker
  // put there too), and so is text made only of pieces of `@<keyword>` (a mention typed in
  // part, perhaps more than once: `@her@herdr`) followed by nothing or by a part of our
  // message (typed after the pill).
  const attemptIsOurs = (composer, app) => {
    if (!composer) return false;
    let rest = squash(plainText(composer)).toLowerCase();
    const mention = squash(`@${app.keyword}`).toLowerCase();
    for (;;) {
      let n = 0;
      while (n < mention.length && n < rest.length && rest[n] === mention[n]) n += 1;
      if (n === 0) break;
      rest = rest.slice(n);
    }
    const message = hc.delivering !== null ? squash(typed.get(hc.delivering.id) ?? '').toLowerCase() : '';
    return rest === '' || (message !== '' && message.includes(rest));
  };

  hc.delivering = null;
  hc.lastGenerating = false;
  let lastFacts = '';
  let lastGeneration;
  let lastUnresolved;
  let factsSeen = null; // the page as the last facts() read it, for what the same recompute sends next
  const facts = () => {
    hc.usagePass += 1;
    const seen = observe();
    factsSeen = seen;
    hc.tally(seen);
    hc.quiet = quietZoneOf(seen);
    if (seen.view) hc.sendRecoveryFacts(seen);
    lastGeneration = seen.label;
    lastUnresolved = seen.unresolved;
    const base = {
      type: TO_WORKER.page_facts, url: location.href, generation: seen.label, page_load: pageLoad,
      unresolved: seen.unresolved, unresolved_why: seen.why, account: hc.account,
    };
    if (!seen.view) {
      return { ...base, composer: false, draft: false, composer_marker: null, generating: false, permission_card: false,
        user_turns: 0, last_user_turn_id: null, last_human_turn_id: null, human_apps: [], markers: [], delivering: hc.delivering?.id ?? null };
    }
    const users = seen.users.list;
    const human = humanTurn(seen.view, users);
    const markers = [];
    for (const turn of users.slice(-MARKER_USER_TURNS)) {
      const own = ownMarker(turn.textContent || '');
      if (own !== null) markers.push(own);
    }
    const text = seen.composer ? composerText(seen.composer) : '';
    const composerOwn = ownMarker(text);
    const composerMarker = composerOwn !== null && composerOwn.length <= CAPS.id_chars ? composerOwn : null;
    // Text this page typed and did not send is not a draft; anything else in the composer
    // is. After a reload the typed text is unknown: the marker line alone says it is ours.
    // The App pill in front of it is ours too, and so is an App being attached right now.
    const ours = (composerMarker !== null && (!typed.has(composerMarker) || squash(plainText(seen.composer)) === squash(typed.get(composerMarker)))) ||
      (hc.delivering?.app !== undefined && attemptIsOurs(seen.composer, hc.delivering.app));
    return {
      ...base,
      composer: Boolean(seen.composer),
      draft: text.trim() !== '' && !ours,
      composer_marker: composerMarker,
      // A missed Stop or streaming cue would let a message be typed into a busy page.
      generating: generatingIn(seen),
      permission_card: hc.sendCards(seen, present(seen.view, 'permission_card', seen.ctx)),
      user_turns: users.length,
      last_user_turn_id: users.length ? idOf(seen, users[users.length - 1]) : null,
      last_human_turn_id: human?.id ?? null,
      human_apps: human ? appsIn(human.el) : [],
      // The worker rejects a page_facts over its caps (ext-core limits.rs: MAX_MARKERS 16,
      // MAX_ID_CHARS 256), so a page full of marker-like text must not silence the facts:
      // send only the newest markers that fit.
      markers: markers.filter((m) => m.length <= CAPS.id_chars).slice(-CAPS.markers),
      delivering: hc.delivering?.id ?? null,
    };
  };
  // ---- The quiet path. While a reply streams, almost every mutation is text added to the
  // reply's body, and no page fact reads that text (markers are read in user turns, the
  // draft in the composer; streaming and completion cues are attributes and elements). So
  // a recompute whose mutations all lie inside that body, and added no element any probe
  // could match, has the facts it had, and is answered without evaluating them. The body
  // qualifies ("quiet zone") only when nothing in it is a page fact's element (`hitIn`: a
  // filterless probe's, a detection marker's or a `never` control's selector matches, or a
  // filtered probe's selector matches and its filters pass — a code block's Copy button
  // matches `button[aria-label]` but is no Stop), no
  // element around it is read for its text (composer, user message, label or text probes),
  // and the generation's selectors depend on no sibling or descendant structure (`:has`,
  // `:nth-…`, `+`, `~`), which added text could change elsewhere. Anything else — an
  // attribute change, a mutation outside the body, a new URL, input, a command — makes
  // the next recompute a full one.
  const STRUCTURAL = /:has\(|:nth-|:first-|:last-|:only-|:empty|[+~](?!=)/;
  const PAGE_FACTS = ['composer', 'root', 'stop', 'turn_list', 'turn', 'user', 'assistant', 'message_id',
    'assistant_body', 'streaming', 'complete', 'permission_card'];
  // view → { view, inside, held, heldCss, any, around } (selector lists), or null
  const compiledQuiet = new WeakMap();
  const quietSelectorsOf = (view) => {
    if (compiledQuiet.has(view)) return compiledQuiet.get(view);
    const probes = PAGE_FACTS.flatMap((fact) => view.facts[fact]);
    const markers = view.generations.flatMap((gen) => [...gen.detect.all, ...gen.detect.any, ...gen.detect.none]);
    const held = probes.filter((probe) => probe.label || probe.text || probe.icon || probe.beside);
    const inside = [...markers, ...view.never, ...probes.filter((probe) => !held.includes(probe)).map((probe) => probe.css)];
    const around = [...view.facts.composer, ...view.facts.user, ...probes.filter((probe) => probe.label || probe.text || probe.beside)].map((probe) => probe.css);
    const list = (all) => [...new Set(all)].join(', ') || ':not(*)';
    let compiled = null;
    if (![...inside, ...held.map((probe) => probe.css)].some((css) => STRUCTURAL.test(css))) {
      compiled = { view, inside: list(inside), held, heldCss: list(held.map((probe) => probe.css)), around: list(around) };
      compiled.any = `${compiled.inside}, ${compiled.heldCss}`;
      try { document.createDocumentFragment().querySelector(`${compiled.any}, ${compiled.around}`); } catch { compiled = null; }
    }
    compiledQuiet.set(view, compiled);
    return compiled;
  };
  // Whether `el` (with `self`) or anything inside it is a page fact's element, by the quiet
  // zone's selectors `q`: one native query when nothing matches (the usual look); else the
  // filtered probes' matches are held against their filters.
  const hitIn = (el, q, self = true) => {
    if (!(self && el.matches(q.any)) && el.querySelector(q.any) === null) return false;
    if ((self && el.matches(q.inside)) || el.querySelector(q.inside) !== null) return true;
    const found = [...(self && el.matches(q.heldCss) ? [el] : []), ...el.querySelectorAll(q.heldCss)];
    return found.some((one) => q.held.some((probe) => hc.matches(one, probe.css) && hc.passes(q.view, probe, one)));
  };
  // A change inside a filtered probe's element (its text, an icon's path) may make it pass.
  const insideHeld = (node, q) => (node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement)?.closest(q.heldCss) != null;
  hc.quiet = null; // { zone, q, href, profile } from the last full recompute
  const quietZoneOf = (seen) => {
    if (!seen.view || !seen.last) return null;
    const selectors = quietSelectorsOf(seen.view);
    const zone = selectors ? bodyOf(seen) : null;
    if (!zone || hitIn(zone, selectors, false) || zone.closest(selectors.around)) return null;
    return { zone, q: selectors, href: location.href, profile: hc.profile };
  };
  // Runs in the recompute (never in the observer callback): O(records since the last one).
  // While the observer leaves the zone's content out (the streaming watch, below), an
  // element added deep inside the zone, or moved in it, makes no record, so the zone is
  // looked at again instead (`lookIn`): one query of the zone, native, for any element
  // that is a page fact's element now — a new one, an old one under new ancestors (a
  // descendant combinator reads them), or one whose text now passes a filter. The zone held
  // none when it became quiet, so any is news. An attribute changed on one is a record (the
  // watch observes the zone's attributes, subtree too).
  // An attribute changed inside the zone is quiet when neither its element nor anything
  // inside it matches a probe: a descendant or child combinator (`.done .final`) reads an
  // ancestor's attributes, so the element's subtree is matched again; sibling combinators
  // and `:has` never reach the quiet path (STRUCTURAL).
  const lookIn = (zone, q) => hitIn(zone, q, false);
  // Whether the quiet zone of the last full recompute still stands for this page.
  // `clock` / `place`: the page's `performance` and `location`, read once here. In this
  // world a call that reads the window's accessor globals (`document`, `location`,
  // `performance`) pays ~17 µs for the first and a few for each other one (timer callbacks
  // under the bench's trace, median of 40 interleaved: empty 29 µs, reading those three and
  // `Node` 58 µs, the same through references read at load 29 µs; docs/BENCH-LOG.md): the
  // recheck tick, 16 times a window, reads through these.
  const clock = performance;
  const place = location;
  const quietStands = () => hc.quiet !== null && hc.quiet.profile === hc.profile && hc.quiet.href === place.href && hc.quiet.zone.isConnected;
  // Only while the page generates: when it does not, the facts outside a reply's (Retry, a
  // thread error, Send) are read, and a button in the reply may be one of them.
  const onlyQuietText = (batches) => {
    if (!hc.lastGenerating || !quietStands()) return false;
    const { zone, q } = hc.quiet;
    if (watchedZone === zone && lookIn(zone, q)) return false;
    for (const records of batches) {
      for (const record of records) {
        if (!zone.contains(record.target) || insideHeld(record.target, q)) return false;
        if (record.type === 'attributes') {
          if (record.target === zone || hitIn(record.target, q)) return false;
          continue;
        }
        for (const node of record.addedNodes) {
          if (node.nodeType === Node.ELEMENT_NODE && hitIn(node, q)) return false;
        }
      }
    }
    return true;
  };
  // Mutation batches since the last recompute, kept (not read) by the observer callback;
  // past QUIET_RECORDS_MAX records the next recompute is a full one anyway.
  const QUIET_RECORDS_MAX = 256;
  let pending = [];
  let pendingRecords = 0;
  let dirty = true;

  // Debug counters for e2e/bench (content script cost): data-* on our host, which the
  // observer below does not watch (its attributeFilter), so writing them causes no recompute.
  // They are written only when the page asks (a `herdr-continuity:counters` event on the
  // host, which runs this listener synchronously): an attribute write on each recompute
  // would cost more than a quiet recompute itself.
  let factsComputed = 0;
  let factsSkipped = 0;
  let factsSent = 0;
  let factsMs = 0;
  const publishCounters = () => {
    host.dataset.factsComputed = String(factsComputed);
    host.dataset.factsSkipped = String(factsSkipped);
    host.dataset.factsMs = factsMs.toFixed(3);
  };
  host.addEventListener('herdr-continuity:counters', publishCounters);
  const sendFacts = (force = false) => {
    const startedAt = performance.now();
    const batches = pending;
    const full = force || dirty;
    pending = [];
    pendingRecords = 0;
    dirty = false;
    factsComputed += 1;
    if (!full && onlyQuietText(batches)) {
      factsSkipped += 1;
      factsMs += performance.now() - startedAt;
      return; // the streaming watch's interval looks again
    }
    const before = lastGeneration;
    const beforeUnresolved = lastUnresolved;
    const current = facts();
    const json = JSON.stringify(current);
    // A reply ended: its turn is reported once, after the facts that say so.
    const ended = hc.wasGenerating && !current.generating && current.unresolved !== 'profile';
    hc.wasGenerating = current.generating;
    watchFor(current);
    hc.lastGenerating = current.generating;
    if (hc.diagnosticsDeferred && !hc.lastGenerating) {
      hc.diagnosticsDeferred = false;
      hc.scheduleDiagnostics();
    }
    factsMs += performance.now() - startedAt;
    if (host.dataset.generation !== (current.generation ?? '')) host.dataset.generation = current.generation ?? '';
    if (hc.profile && before !== undefined && (current.generation !== before || current.unresolved !== beforeUnresolved)) hc.sendDiagnostics(true);
    if (!force && json === lastFacts) {
      if (ended) sendTurnEnded(factsSeen);
      return;
    }
    lastFacts = json;
    hc.port?.postMessage(current);
    host.dataset.factsSent = String(++factsSent);
    if (ended) sendTurnEnded(factsSeen);
    else if (!current.generating && current.unresolved !== 'profile') sendThreadFacts(false, factsSeen);
    hc.scheduleDiagnostics();
  };
  // The recompute timer (`soon`: ≤ 100 ms after a mutation or an input) and, while the
  // streaming watch lasts, one interval of the profile's streaming_recheck_ms that looks
  // into the zone (a tick while a recompute is due leaves the look to it). One interval,
  // not a timer armed again after each look: a call into the page costs the same however
  // little it does, and arming a timer is a part of it. setTimeout / setInterval, not
  // requestAnimationFrame: rAF is paused in background tabs, and a bound chat usually is
  // one. While the watch lasts, the health meters ride on the interval (content-health.js
  // healthBeat: its lateness is their drift).
  let scheduled = null; // null | { timer }
  const scheduleRecompute = () => {
    if (scheduled) return;
    scheduled = { timer: setTimeout(() => {
      scheduled = null;
      sendFacts();
    }, 100) };
  };
  // A tick whose only input is the zone (no record since the last recompute, nothing made
  // the next one full) is the look alone: the zone still quiet and still matching nothing
  // is the facts it had (counted as a quiet recompute). Anything else is a recompute.
  let recheck = null; // null | { timer, ms, due }
  const recheckTick = () => {
    const now = clock.now();
    const late = now - recheck.due;
    recheck.due = late > recheck.ms ? now + recheck.ms : recheck.due + recheck.ms;
    hc.healthBeat?.(late, now);
    if (scheduled) return;
    if (!dirty && pending.length === 0 && watchedZone !== null && quietStands() && hc.quiet.zone === watchedZone && !lookIn(watchedZone, hc.quiet.q)) {
      factsComputed += 1;
      factsSkipped += 1;
      return;
    }
    sendFacts();
  };
  const recheckEvery = (on) => {
    if (on === (recheck !== null)) return;
    if (on) {
      const ms = hc.profile?.streaming_recheck_ms ?? 100;
      recheck = { timer: setInterval(recheckTick, ms), ms, due: performance.now() + ms };
    } else {
      clearInterval(recheck.timer);
      recheck = null;
    }
  };
  // Anything but the observer (input, navigation, a command) makes the next recompute full.
  const scheduleFacts = () => {
    dirty = true;
    scheduleRecompute();
  };
  // O(1) per batch, records unread here (the recompute reads them for the quiet path): the
  // HUD's shadow tree is invisible to this observer, and our host's own data-* writes are
  // outside attributeFilter, so no batch is ours alone (and an extra recompute would be
  // coalesced and, unchanged, not sent). The attributes watched are the ones the profile's
  // selectors name, plus the label, class, disabled and icon-path attributes the probe
  // filters read.
  const onRecords = (records) => {
    hc.meters.callbacks += 1;
    if (!dirty) {
      pendingRecords += records.length;
      if (pendingRecords > QUIET_RECORDS_MAX) { dirty = true; pending = []; } else pending.push(records);
    }
    scheduleRecompute();
  };
  const observer = new MutationObserver(onRecords);
  // A press is read against the page as the user saw it when pressing: mutations not yet
  // turned into facts are, first (and a reply that ended, into its `turn_ended`), so the
  // worker hears them before the press, on the same port, in that order. Without it a
  // reply that ended < 100 ms before "Journal this chat" was journaled as if it came after.
  const flushFacts = () => {
    if (observer.takeRecords().length) dirty = true;
    // While the streaming watch lasts its next look is always due: a press looks first.
    if (!scheduled && !dirty && !recheck) return;
    if (scheduled) clearTimeout(scheduled.timer);
    scheduled = null;
    sendFacts();
  };
  // Posts what a press says (`make()` reads the page after the flush).
  const postPress = (make) => {
    flushFacts();
    hc.send(make());
  };
  let watched = null; // { whole, shallow, zone } observe() options for the profile's attributes
  // The attributes watched: the ones the probe filters read, and every one a selector of the
  // profile names — its fact chains, `never` and `disabled` lists, and the generations'
  // detection rules (the quiet path's selectors include the `never` and detection ones).
  const watch = () => {
    const names = new Set(['id', 'class', 'aria-label', 'title', 'disabled', 'aria-disabled', 'aria-busy', 'd', 'data-testid']);
    const profile = hc.profile;
    const selectors = [
      ...Object.values(profile?.facts ?? {}).flat().map((probe) => probe.css),
      ...(profile?.never ?? []), ...(profile?.disabled ?? []),
      ...(profile?.generations ?? []).flatMap((gen) => [...gen.detect.all, ...gen.detect.any, ...gen.detect.none]),
    ];
    for (const css of selectors) for (const m of css.matchAll(/\[([a-zA-Z0-9_-]+)/g)) names.add(m[1]);
    for (const probe of Object.values(profile?.facts ?? {}).flat()) if (probe.attr) names.add(probe.attr);
    const attributeFilter = [...names];
    watched = {
      whole: { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter },
      shallow: { childList: true, attributes: true, attributeFilter },
      zone: { subtree: true, attributes: true, attributeFilter },
      text: { characterData: true }, // a text or comment node: it has no attributes or children
    };
    rebuild(); // the attribute filter changed: every registration afresh
    watchWhole();
  };
  // ---- The streaming watch. While a reply streams into a quiet zone, nearly every
  // mutation is a token of its text, and a document-wide observer pays for each one (a
  // record, a callback, a timer) only for the quiet path to set it aside. So while the
  // last full recompute saw the page generating into a quiet zone, the observer watches
  // around the zone but not its content: the zone and its subtree for attributes only,
  // each ancestor of it for its attributes and children (not deeper), and the other
  // children of those ancestors with their whole subtrees (of the ones before the zone's
  // branch, only the nearest: WATCH_BEFORE, below). Every change the facts read outside
  // the zone still makes a record, as does every watched attribute in it (classic's
  // streaming cue, thread's final id); what does not (text, elements added in the zone) is
  // looked at by a recompute that comes every profile `streaming_recheck_ms` while the
  // watch lasts (onlyQuietText).
  // A full recompute that finds the page no longer generating, or no quiet zone, goes
  // back to watching the whole document.
  let watchedZone = null; // the zone whose content the observer leaves out, or null
  // The observer's registrations: node → the options it was last observed with. observe()
  // on a node the observer already watches replaces that node's options (DOM standard), so
  // a watch registers only the nodes whose options change: the ones above the turn list
  // stay from one reply to the next (~30 nodes registered afresh at each submit: ~0.5 ms
  // between trace marks, docs/BENCH-LOG.md). A node an earlier watch registered and this
  // one does not want ("stale": an older turn, a finished reply) only adds records — each
  // makes the next recompute a full one, so no fact is missed — and is cut by building the
  // registrations afresh (disconnect) once more than STALE_MAX are left, or when one lies
  // inside the zone (its records would be the streamed tokens).
  const STALE_MAX = 24;
  let registered = new Map();
  const register = (node, options) => {
    if (registered.get(node) === options) return;
    observer.observe(node, options);
    registered.set(node, options);
  };
  const rebuild = () => {
    // Records of our own synchronous work (none are expected) are not lost by disconnect().
    if (observer.takeRecords().length) dirty = true;
    observer.disconnect();
    registered = new Map();
  };
  const watchWhole = () => {
    recheckEvery(false);
    if (watchedZone) hc.healthRide?.(false);
    watchedZone = null;
    register(document.documentElement, watched.whole);
    if (dirty) scheduleRecompute();
  };
  // Our own HUD host is left out (its closed shadow tree is invisible to an observer, and it
  // carries no attribute the filter names).
  // Of an ancestor's other children, the watch takes every one after the zone's branch and
  // only the WATCH_BEFORE nearest before it: in a long chat those are the turn list's old
  // turns, hundreds of subtrees that no page fact reads (markers come from the last
  // MARKER_USER_TURNS user turns, the rest from the tail and the composer). The turn list
  // itself is still watched for added and removed children, so a turn that appears or
  // leaves makes a record; a change deep inside an older turn waits for the next full
  // recompute (at the latest when the reply ends).
  const WATCH_BEFORE = 2 * MARKER_USER_TURNS + 2;
  const nodesAround = (zone) => {
    const wanted = new Map([[zone, watched.zone]]);
    for (let node = zone; node !== document.documentElement; node = node.parentElement) {
      const parent = node.parentElement;
      wanted.set(parent, watched.shallow);
      let before = 0;
      for (let other = node.previousSibling; other && before < WATCH_BEFORE; other = other.previousSibling) {
        if (other !== host) wanted.set(other, other.nodeType === Node.ELEMENT_NODE ? watched.whole : watched.text);
        if (other.nodeType === Node.ELEMENT_NODE) before += 1;
      }
      for (let other = node.nextSibling; other; other = other.nextSibling) {
        if (other !== host) wanted.set(other, other.nodeType === Node.ELEMENT_NODE ? watched.whole : watched.text);
      }
    }
    return wanted;
  };
  const watchAround = (zone) => {
    const wanted = nodesAround(zone);
    let stale = 0;
    let inside = false;
    for (const node of registered.keys()) {
      if (wanted.has(node)) continue;
      stale += 1;
      if (zone.contains(node)) inside = true;
    }
    if (stale > STALE_MAX || inside) rebuild();
    for (const [node, options] of wanted) register(node, options);
    if (!watchedZone) hc.healthRide?.(true);
    watchedZone = zone;
    recheckEvery(true);
    if (dirty) scheduleRecompute();
  };
  const watchFor = (current) => {
    const zone = current.generating && hc.quiet && hc.quiet.zone.getRootNode() === document ? hc.quiet.zone : null;
    // Re-registered after every full recompute: it may have followed a new sibling.
    if (zone) watchAround(zone);
    else if (watchedZone) watchWhole();
  };
  watch();
  document.addEventListener('input', scheduleFacts, true);
  addEventListener('popstate', scheduleFacts);
  Object.assign(hc, { APP_KEYWORD_MAX, appMentions, pillElements, readPill, sameApp, plainText, attemptIsOurs, sendFacts,
    scheduleFacts, postPress, watch });
})();
