// Content script: the site profile's probes (finding page facts through the chains the
// worker sends), the delivery markers (read with own-marker.js), the turn list and its caches, and `observe`, the
// one read of the page every fact comes from.
(() => {
  const hc = globalThis[Symbol.for('herdr-continuity.content')];
  if (!hc) return; // a second injection: the first copy runs
  const CAPS = globalThis.herdrContracts.caps; // extension/contracts.js (the worker's limits)

  // ---- The site profile (ext-core `sites` flat profile, docs/PROTOCOL.md "Site profiles
  // and page diagnostics"). The worker sends it on connect: per fact one chain of probes
  // merged across every known layout generation of the site. Each fact resolves through
  // its own chain (the first probe that finds something wins), so a page that mixes the
  // markup of two generations works as long as every fact it needs resolves. Until a
  // profile arrives, and while a needed fact is missing or ambiguous (`unresolved`), the
  // adapter types and clicks nothing. Which generation's detection rule holds is only a
  // label (`generation`: its id, "mixed", or null). Everything site-specific (selectors,
  // labels, icon paths) is in the profile; this script only knows how to evaluate a probe
  // (ext-core sites::Probe).
  const pageLoad = crypto.randomUUID();
  hc.profile = null;
  const labelSets = new WeakMap(); // a profile's labels → Map(label key → lower-cased labels)
  const labelsOf = (view, key) => {
    let sets = labelSets.get(view.labels);
    if (!sets) {
      sets = new Map(view.labels.map((set) => [set.key, [...set.en, ...set.zh].map((l) => l.toLowerCase())]));
      labelSets.set(view.labels, sets);
    }
    return sets.get(key) ?? [];
  };
  // A selector the browser rejects (a profile newer than this Chrome) matches nothing.
  const queryAll = (scope, css) => { try { return [...scope.querySelectorAll(css)]; } catch { return []; } };
  const matches = (el, css) => { try { return el.matches(css); } catch { return false; } };
  const closest = (el, css) => { try { return el?.closest(css) ?? null; } catch { return null; } };
  // ---- The live page: everything but the old turns. A long chat's turn list holds
  // hundreds of units no page fact reads (a reply streams, a card waits, an error shows in
  // the newest units or outside the list), so every document-wide probe looks at the live
  // page only, but for the ones that need the whole document (`WHOLE_DOC`): the turn and
  // user lists, which count the thread, and the composer chain and every `unique` probe,
  // whose "exactly one" must count every match (an inline editor opened on an old message
  // makes the composer ambiguous, so nothing is typed; soleComposer agrees). The live page
  // is the turn list's ancestors themselves, their other children's subtrees, and the list's last
  // TAIL_TURNS units. Its cost does not grow with the turns. Without a known turn list (a
  // short chat, a page being built) it is the whole document. The parts are found again on
  // each observe() (a portal added beside the list counts at once); they come in document
  // order, so a first match is the document's first live one.
  const TAIL_TURNS = 12;
  const WHOLE_DOC = new Set(['turn', 'user', 'composer']);
  hc.livePass = 0;
  let live = { pass: -1, list: null, parts: null };
  const liveParts = () => {
    const list = hc.turnCache?.profile === hc.profile ? hc.turnCache.list : null;
    if (live.pass === hc.livePass && live.list === list) return live.parts;
    let parts = null; // [{ el, deep }]: `deep` its subtree, else the element alone
    if (list?.isConnected && list.childElementCount > 0) {
      const path = [];
      for (let node = list; node; node = node.parentElement) path.unshift(node);
      const before = [];
      const after = [];
      for (let i = 0; i < path.length - 1; i++) {
        before.push({ el: path[i], deep: false });
        let child = path[i].firstElementChild;
        for (; child && child !== path[i + 1]; child = child.nextElementSibling) before.push({ el: child, deep: true });
        const level = [];
        for (child = child?.nextElementSibling; child; child = child.nextElementSibling) level.push({ el: child, deep: true });
        after.unshift(level);
      }
      // A list of at most TAIL_TURNS units is its own tail: one query instead of one per unit.
      const tail = [];
      if (list.childElementCount <= TAIL_TURNS) tail.push({ el: list, deep: true });
      else {
        before.push({ el: list, deep: false });
        for (let unit = list.lastElementChild; unit && tail.length < TAIL_TURNS; unit = unit.previousElementSibling) tail.unshift({ el: unit, deep: true });
      }
      parts = [...before, ...tail, ...after.flat()];
    }
    live = { pass: hc.livePass, list, parts };
    return parts;
  };
  // Every match of `css` in the live page (document order), or its first (null: none).
  const liveAll = (css) => {
    const parts = liveParts();
    if (!parts) return queryAll(document, css);
    const out = [];
    try {
      for (const { el, deep } of parts) {
        if (el.matches(css)) out.push(el);
        if (deep) for (const found of el.querySelectorAll(css)) out.push(found);
      }
    } catch { return []; }
    return out;
  };
  const liveFirst = (css) => {
    const parts = liveParts();
    if (!parts) { try { return document.querySelector(css); } catch { return null; } }
    try {
      for (const { el, deep } of parts) {
        if (el.matches(css)) return el;
        const found = deep ? el.querySelector(css) : null;
        if (found) return found;
      }
    } catch { return null; }
    return null;
  };
  const exists = (css) => liveFirst(css) !== null;
  const ruleHolds = (rule) => rule.all.every(exists) && (rule.any.length === 0 || rule.any.some(exists)) && !rule.none.some(exists);
  // The diagnostic label's generation: the first whose detection rule holds.
  const detect = () => hc.profile?.generations.find((gen) => ruleHolds(gen.detect)) ?? null;
  // Detection costs a document-wide query per marker (one that is absent scans the whole
  // DOM), so its answer is kept while the page keeps its shape: same URL, the same
  // composer still in the document, the same turn list with as many units. Streaming into
  // the last turn changes none of these.
  hc.detected = null;
  const shapeNow = () => {
    const list = hc.turnCache.list;
    const same = hc.detected && hc.detected.profile === hc.profile && hc.detected.href === location.href &&
      hc.detected.composerHit?.el.isConnected && hc.detected.list === list && (!list || (list.isConnected && list.childElementCount === hc.detected.units));
    if (same) return hc.detected;
    hc.detected = { profile: hc.profile, gen: detect(), href: location.href, composerHit: find(hc.profile, 'composer', {}, true), list, units: list?.childElementCount, fresh: true };
    return hc.detected;
  };
  // The composer is found with the shape (the thread layout's composer sits after the
  // turns, so a document query for it walks the whole thread). Kept while it is in the
  // document, was the only match, and still matches the chain's first probe; a fallback or
  // `unique` probe is looked up again, since an earlier probe, or a second match, may
  // have appeared since. `list` holds every element the winning probe found (more than
  // one: ambiguous).
  const composerNow = () => {
    const hit = hc.detected.composerHit;
    const kept = hc.detected.fresh || (hit && hit.list.length === 1 && hit.probe === hc.profile.facts.composer[0] && !hit.probe.unique &&
      matches(hit.el, hit.probe.css) && passes(hc.profile, hit.probe, hit.el));
    if (!kept) hc.detected.composerHit = find(hc.profile, 'composer', {}, true);
    hc.detected.fresh = false;
    return hc.detected.composerHit;
  };
  // A control's whole label: aria-label, else title, else its text (textContent: no layout).
  const labelOf = (el) => (el.getAttribute('aria-label') || el.getAttribute('title') || el.textContent || '').trim().toLowerCase();
  const hasLabel = (view, el, key) => labelsOf(view, key).includes(labelOf(el));
  const hasText = (view, el, key) => {
    const content = (el.textContent || '').toLowerCase();
    return labelsOf(view, key).some((phrase) => content.includes(phrase));
  };
  const hasIcon = (el, prefix) => queryAll(el, 'path').some((path) => (path.getAttribute('d') || '').startsWith(prefix));
  const besideLabel = (view, el, key) => {
    for (let node = el, i = 0; node && i <= 3; node = node.parentElement, i++) {
      if (queryAll(node, 'button').some((button) => button !== el && hasLabel(view, button, key))) return true;
    }
    return false;
  };
  // Dictation, voice and read-aloud controls are never Send or Stop (sites::Generation::never).
  const neverControl = (view, el) => {
    if (view.never.some((css) => matches(el, css))) return true;
    const names = `${el.getAttribute('aria-label') || ''} ${el.getAttribute('title') || ''} ${el.getAttribute('data-testid') || ''}`.toLowerCase();
    return labelsOf(view, 'not_stop_words').some((word) => names.includes(word));
  };
  const passes = (view, probe, el) =>
    (!probe.label || hasLabel(view, el, probe.label)) &&
    (!probe.text || hasText(view, el, probe.text)) &&
    (!probe.icon || hasIcon(el, probe.icon)) &&
    (!probe.beside || besideLabel(view, el, probe.beside));
  const selfAndInside = (el, css) => (el ? [...(matches(el, css) ? [el] : []), ...queryAll(el, css)] : []);
  // The first element a filterless probe finds, in the same order as `candidates` (one
  // querySelector per scope element instead of collecting every match).
  const firstOf = (probe, ctx) => {
    const first = (el) => (el ? (matches(el, probe.css) ? el : (() => { try { return el.querySelector(probe.css); } catch { return null; } })()) : null);
    switch (probe.scope) {
      case 'doc': if (ctx.whole) { try { return document.querySelector(probe.css); } catch { return null; } } return liveFirst(probe.css);
      case 'root': return ctx.root && ctx.root !== document ? (() => { try { return ctx.root.querySelector(probe.css); } catch { return null; } })() : null;
      case 'tail': for (const unit of ctx.tail) { const el = first(unit); if (el) return el; } return null;
      case 'last': return first(ctx.last);
      default: return undefined;
    }
  };
  const filtered = (probe) => probe.label || probe.text || probe.icon || probe.beside || probe.unique;
  // The candidates of one probe in its scope (sites::Scope), filtered; with `all` false only
  // the first is needed.
  const candidates = (view, probe, ctx, all = true) => {
    if (!all && !ctx.controls && !filtered(probe)) {
      const el = firstOf(probe, ctx);
      if (el !== undefined) return el ? [el] : [];
    }
    let found;
    switch (probe.scope) {
      case 'doc': found = ctx.whole || probe.unique ? queryAll(document, probe.css) : liveAll(probe.css); break;
      case 'root': found = ctx.root ? queryAll(ctx.root, probe.css) : []; break;
      case 'closest': { const up = closest(ctx.from?.parentElement, probe.css); found = up ? [up] : []; break; }
      case 'tail': found = ctx.tail.flatMap((unit) => selfAndInside(unit, probe.css)); break;
      case 'last': found = selfAndInside(ctx.last, probe.css); break;
      case 'message': {
        const el = ctx.message;
        const own = el ? selfAndInside(el, probe.css)[0] ?? closest(el, probe.css) : null;
        found = own ? [own] : [];
        break;
      }
      default: found = [];
    }
    found = found.filter((el) => passes(view, probe, el));
    if (ctx.controls) found = found.filter((el) => !neverControl(view, el));
    if (probe.unique && found.length !== 1) return [];
    return found;
  };
  // Fallbacks counted (diagnostics `usage`): per fact, the probe that won last and how many
  // recomputes each probe won since load — at most once per recompute (`usagePass`, one per
  // observe()), reset when a new profile arrives. Counts only.
  const usage = new Map(); // fact → { probe, wins: Map(probe → recomputes won), pass }
  hc.usagePass = 0;
  let usageProfile = null;
  const won = (fact, probe) => {
    if (usageProfile !== hc.profile) { usage.clear(); usageProfile = hc.profile; }
    let u = usage.get(fact);
    if (!u) { u = { probe, wins: new Map(), pass: -1 }; usage.set(fact, u); }
    if (u.pass === hc.usagePass && u.probe === probe) return;
    u.pass = hc.usagePass;
    u.probe = probe;
    u.wins.set(probe, (u.wins.get(probe) ?? 0) + 1);
  };
  // The first probe of a fact that finds something wins: { el, list, probe } or null
  // (`list` holds every match only when `all` is asked for).
  const find = (view, fact, ctx = {}, all = false) => {
    if (WHOLE_DOC.has(fact) && !ctx.whole) ctx = { ...ctx, whole: true };
    for (const probe of view.facts[fact]) {
      const list = candidates(view, probe, ctx, all);
      if (list.length) { won(fact, probe); return { el: list[0], list, probe }; }
    }
    return null;
  };
  // Whether a fact holds, for the facts that are only true or false on every recompute
  // (Stop, permission card): the document-wide probes go into one selector, so the fact
  // costs one document scan however many probes it has; each element found is then held
  // against the probes' filters.
  // Order does not matter for a yes / no answer, so the cheap scopes go first: the
  // composer's root (where Stop's test ids live) and the other scoped probes; the document
  // is scanned only when they found nothing.
  // Compiled once per chain (a profile's fact chain; views of one profile share them).
  const compiledPresence = new WeakMap(); // chain → { doc, css, rest } or null
  const presenceOf = (view, fact) => {
    const chain = view.facts[fact];
    if (compiledPresence.has(chain)) return compiledPresence.get(chain);
    const doc = chain.filter((probe) => probe.scope === 'doc' && !probe.unique);
    const css = doc.map((probe) => probe.css).join(', ');
    const valid = css !== '' && (() => { try { document.createDocumentFragment().querySelector(css); return true; } catch { return false; } })();
    const compiled = valid ? { doc, css, rest: chain.filter((probe) => !doc.includes(probe)) } : null;
    compiledPresence.set(chain, compiled);
    return compiled;
  };
  const present = (view, fact, ctx) => {
    const compiled = presenceOf(view, fact);
    if (!compiled) return Boolean(find(view, fact, ctx));
    const { doc, css, rest } = compiled;
    const holds = (found) => {
      for (const el of found) {
        if (ctx.controls && neverControl(view, el)) continue;
        if (doc.some((probe) => matches(el, probe.css) && passes(view, probe, el))) return true;
      }
      return false;
    };
    if (rest.some((probe) => candidates(view, probe, ctx).length > 0)) return true;
    if (ctx.root && ctx.root !== document && holds(ctx.root.querySelectorAll(css))) return true;
    return holds(liveAll(css));
  };
  const isStop = (view, el) => view.facts.stop.some((probe) => matches(el, probe.css) && passes(view, probe, el)) && !neverControl(view, el);
  const isDisabled = (view, el) => el.disabled === true || view.disabled.some((css) => matches(el, css));
  const describe = (probe) => {
    if (!probe) return null;
    const filters = ['label', 'text', 'icon', 'attr', 'beside'].filter((key) => probe[key]).map((key) => `${key}=${probe[key]}`);
    if (probe.unique) filters.push('unique');
    return [probe.css, ...filters].join(' ').slice(0, CAPS.selector_chars);
  };

  // ---- Page facts (facts only; the worker decides). Coalesced: a mutation only schedules
  // one recompute (≤ 1 per 100 ms); an unchanged result is not sent.
  // Cost invariants (REFERENCE.md §2: "a full DOM scan on every streamed token"; measured by
  // e2e/bench/content-cost.mjs): the observer callback is O(1) per batch; a recompute reads
  // no layout (textContent; innerText only for a new user turn without a page id, whose
  // text hash is its id) and, once the turn list is known, touches only the composer's form
  // and the last TAIL_TURNS units of the turn list, plus the user messages of the units
  // added since (threadFind), and the document-wide probes of Stop and the permission card
  // when their scoped look found nothing. A
  // recompute whose mutations were all text inside the streaming reply evaluates nothing
  // (the quiet path, below), and while a reply streams its text makes no mutation record
  // at all (the streaming watch). Old turns are virtualized away by the sites anyway.
  // Our marker line and whose a text is: extension/own-marker.js (the rule of
  // protocol/src/marker.rs, tested against its case list).
  const { ownMarker, hasMarker, oursByMarker } = globalThis[Symbol.for('herdr-continuity.own-marker')];
  // Markers are read from this many of the newest user turns (facts(), the streaming watch).
  const MARKER_USER_TURNS = 5;
  // The turn list: the element whose children are the turns or their wrappers (a profile
  // `turn_list` probe, else the nearest common ancestor of the first and last turn, so
  // turns wrapped in their own `section` / `div` still share one list). Kept while it is
  // in the document and the profile is the same; with fewer than two turns nothing is kept.
  hc.turnCache = { profile: null, list: null, probe: null, listProbe: null };
  const commonAncestor = (a, b) => {
    for (let node = a.parentElement; node; node = node.parentElement) if (node.contains(b)) return node;
    return null;
  };
  const turnsNow = () => {
    if (hc.turnCache.profile === hc.profile && hc.turnCache.list?.isConnected && hc.turnCache.list.firstElementChild) {
      return { ...hc.turnCache, tail: tailOf(hc.turnCache.list) };
    }
    hc.turnCache = { profile: null, list: null, probe: null, listProbe: null };
    const turns = find(hc.profile, 'turn', {}, true);
    if (!turns) return { list: null, tail: [], probe: null, listProbe: null };
    const first = turns.list[0];
    const last = turns.list[turns.list.length - 1];
    const listed = find(hc.profile, 'turn_list', { from: first });
    const byProbe = listed && listed.el.contains(last) ? listed.el : null;
    const list = byProbe ?? (first === last ? null : commonAncestor(first, last));
    if (!list) return { list: null, tail: [first], probe: turns.probe, listProbe: null };
    hc.turnCache = { profile: hc.profile, list, probe: turns.probe, listProbe: byProbe ? listed.probe : null };
    return { ...hc.turnCache, tail: tailOf(list) };
  };
  const tailOf = (list) => {
    const tail = [];
    for (let unit = list.lastElementChild; unit && tail.length < TAIL_TURNS; unit = unit.previousElementSibling) tail.unshift(unit);
    return tail;
  };
  // The user messages on every full recompute, through `threadFind` (below): the settled
  // units' matches kept, the newest units read again. (A cache keyed by the list's shape —
  // unit count, first and last unit — missed a user message rendered into a unit that was
  // already there: a unit that came first and its message after.)
  const usersNow = () => {
    const users = threadFind(hc.profile, 'user');
    return { list: users?.list ?? [], probe: users?.probe ?? null };
  };
  // `find(view, fact, {}, true)` of a fact that counts the thread (`turn`, `user`: every
  // match in the whole document), kept for the turn list's settled units — all but its last
  // TAIL_TURNS, which are looked at again each time — while the list only grew at its end:
  // the same list, the same first unit, the last settled unit where it was (as many units
  // before it) and the newest MARKER_USER_TURNS kept matches still in the document. So a
  // submit on a long chat looks at the new units, not at the hundreds of old ones (old turns
  // are history, as for the live page). Anything else (a list replaced, units removed before
  // the tail, a match outside the list, a chain whose earlier probe now matches in the
  // tail, a chat too short to have settled units) is a whole-document query, as before.
  const settled = new Map(); // fact → { chain, list, first, edge, at, probe, kept }
  const threadFind = (view, fact) => {
    const chain = view.facts[fact];
    const list = hc.turnCache.profile === hc.profile ? hc.turnCache.list : null;
    const was = settled.get(fact);
    const at = list ? list.childElementCount - TAIL_TURNS - 1 : -1;
    const edge = at >= 0 ? list.children[at] : null;
    const reuse = was && edge && was.chain === chain && was.list === list && list.isConnected && was.first === list.firstElementChild &&
      was.at <= at && list.children[was.at] === was.edge && was.kept.slice(-MARKER_USER_TURNS).every((el) => el.isConnected);
    if (reuse) {
      // The kept matches lie in the units up to `was.edge`; the rest of the list is scanned.
      const fresh = [];
      let winner = -1;
      const last = chain.indexOf(was.probe);
      for (let i = 0; i <= last && winner < 0; i++) {
        for (let unit = was.edge.nextElementSibling; unit; unit = unit.nextElementSibling) {
          for (const el of selfAndInside(unit, chain[i].css)) if (passes(view, chain[i], el)) fresh.push(el);
        }
        if (fresh.length) winner = i;
      }
      if (winner === last || (winner < 0 && was.kept.length)) {
        const all = [...was.kept, ...fresh];
        settled.set(fact, { ...was, edge, at, kept: [...was.kept, ...fresh.filter((el) => upTo(edge, el))] });
        won(fact, was.probe);
        return { el: all[0], list: all, probe: was.probe };
      }
    }
    const hit = find(view, fact, {}, true);
    settled.delete(fact);
    const plain = hit && chain.every((probe) => probe.scope === 'doc' && !probe.unique);
    if (plain && edge && hit.list.every((el) => el !== list && list.contains(el))) {
      settled.set(fact, { chain, list, first: list.firstElementChild, edge, at, probe: hit.probe, kept: hit.list.filter((el) => upTo(edge, el)) });
    }
    return hit;
  };
  // Whether `el` lies in `unit` or in a unit before it.
  const upTo = (unit, el) => unit === el || unit.contains(el) || Boolean(unit.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_PRECEDING);
  // The turn generation: the generations of the probe that found the turns (narrowed to
  // the diagnostic label's when it is one of them: a classic page's turns found by a probe
  // classic shares with section are classic turns), else the label's, else every
  // generation. A reply streams, is complete and has its
  // body by that generation's probes only (TURN_FACTS), so a thread turn never "completes"
  // by a classic copy button, and it counts as streaming until complete when any of them
  // says so (`pending_until_complete`). A view is the profile with those chains cut to
  // the turn generation, one object per profile and generation set (the caches below are
  // keyed by it).
  const TURN_FACTS = ['streaming', 'complete', 'assistant_body'];
  const views = new WeakMap(); // profile → Map(generation ids → view)
  const gensOf = (probe) => (Array.isArray(probe?.gens) && probe.gens.length ? probe.gens : null);
  const viewOf = (gens) => {
    let byGens = views.get(hc.profile);
    if (!byGens) { byGens = new Map(); views.set(hc.profile, byGens); }
    const key = gens.join(' ');
    let view = byGens.get(key);
    if (!view) {
      const facts = { ...hc.profile.facts };
      for (const fact of TURN_FACTS) facts[fact] = hc.profile.facts[fact].filter((probe) => (gensOf(probe) ?? gens).some((id) => gens.includes(id)));
      const pending = hc.profile.generations.some((gen) => gens.includes(gen.id) && gen.pending_until_complete);
      view = { ...hc.profile, facts, gens, pending_until_complete: pending };
      byGens.set(key, view);
    }
    return view;
  };
  // The last assistant message (searched in the tail, else in the document) and the scope
  // `last` probes look in: its turn when that turn holds no user message, else itself.
  const lastAssistant = (view, tail, turnProbe) => {
    for (const probe of view.facts.assistant) {
      let el = null;
      for (let i = tail.length - 1; i >= 0 && !el; i--) el = selfAndInside(tail[i], probe.css).pop() ?? null;
      if (!tail.length) el = queryAll(document, probe.css).pop() ?? null;
      if (!el) continue;
      const turn = turnProbe ? closest(el, turnProbe.css) : null;
      const userInside = turn && view.facts.user.some((user) => { try { return turn.querySelector(user.css) !== null; } catch { return false; } });
      return { el, probe, scope: turn && !userInside ? turn : el };
    }
    return null;
  };
  const composerText = (el) => (el.tagName === 'TEXTAREA' || el.tagName === 'INPUT' ? el.value : el.textContent) || '';
  const squash = (value) => value.replace(/\s+/g, '');
  const typed = new Map(); // delivery id → text this page life typed (never typed twice)
  // Everything the adapter found, for facts, diagnostics and commands; `unresolved` / `why`:
  // the first needed fact that does not resolve (docs/PROTOCOL.md "page_facts"), in this
  // order: composer (none, or its probe finds more than one), root (none up from the
  // composer), send (its probe finds more than one control that is not Stop), stop (more
  // than one), user (turns but no user or assistant message). Message ids are not gated on:
  // recorded real pages show user turns without them (a delivery is confirmed by its marker).
  // While it is not null nothing is typed or clicked.
  const observe = () => {
    if (!hc.profile) return { view: null, label: null, unresolved: 'profile', why: 'missing' };
    hc.livePass += 1;
    const shape = shapeNow();
    const composerHit = composerNow();
    let unresolved = null;
    let why = null;
    const fail = (fact, reason) => {
      if (unresolved === null) { unresolved = fact; why = reason; }
    };
    if (!composerHit) fail('composer', 'missing');
    else if (composerHit.list.length > 1) fail('composer', 'ambiguous');
    const composer = unresolved === null ? composerHit.el : null;
    const rootHit = composer ? find(hc.profile, 'root', { from: composer }) : null;
    if (composer && !rootHit) fail('root', 'missing');
    const root = rootHit?.el ?? null;
    const turns = turnsNow();
    const users = usersNow();
    const labelled = shape.gen ? [shape.gen.id] : null;
    const turnGens = gensOf(turns.probe);
    const view = viewOf((turnGens && labelled && turnGens.includes(labelled[0]) ? labelled : turnGens) ?? labelled ?? hc.profile.generations.map((gen) => gen.id));
    const last = lastAssistant(view, turns.tail, turns.probe);
    const ctx = { root, tail: turns.tail, last: last?.scope ?? null, controls: true };
    const sendHit = root ? find(view, 'send', ctx, true) : null;
    const sends = sendHit ? sendHit.list.filter((el) => !isStop(view, el)) : [];
    if (sends.length > 1) fail('send', 'ambiguous');
    const stop = present(view, 'stop', ctx);
    if (stop && (find(view, 'stop', ctx, true)?.list.length ?? 0) > 1) fail('stop', 'ambiguous');
    ctx.controls = false;
    if (turns.tail.length && !users.list.length && !last) fail('user', 'missing');
    const streaming = find(view, 'streaming', ctx);
    const complete = last ? find(view, 'complete', ctx) : null;
    const label = shape.gen?.id ?? (composer ? 'mixed' : null);
    return {
      view, label, unresolved, why, composerHit, composer, rootHit, root, turns, users, last, ctx,
      send: sends.length === 1 ? sends[0] : null, stop, streaming, complete, memo: new Map(),
    };
  };
  // What several readers of one recompute ask of the same page — the last reply's body
  // (null: none found), a message's id — is looked up once per `seen`.
  const bodyOf = (seen) => {
    if (!seen.memo.has(bodyOf)) seen.memo.set(bodyOf, seen.last ? find(seen.view, 'assistant_body', seen.ctx)?.el ?? null : null);
    return seen.memo.get(bodyOf);
  };
  const idOf = (seen, el) => {
    if (!el) return null;
    if (!seen.memo.has(el)) seen.memo.set(el, messageId(seen.view, el));
    return seen.memo.get(el);
  };
  const generatingIn = (seen) => Boolean(seen.stop || seen.streaming ||
    (seen.view.pending_until_complete && seen.last && !seen.complete));
  // The Send control, only while it is the one control the send chain found that is not
  // Stop (a flipping submit button that shows Stop is never Send) and it is enabled.
  const sendControl = (seen) => (seen.send && !isDisabled(seen.view, seen.send) ? seen.send : null);
  // The composer when its chain finds exactly one in the whole document (as observe() looks
  // for it), for removing our own text and for the Queue button (which need no other fact).
  const soleComposer = () => {
    const hit = hc.profile ? find(hc.profile, 'composer', {}, true) : null;
    return hit?.list.length === 1 ? hit.el : null;
  };
  const messageId = (view, el) => {
    const hit = el ? find(view, 'message_id', { message: el }) : null;
    const value = hit ? hit.el.getAttribute(hit.probe.attr) : null;
    return value ? value.trim().split(/\s+/)[0] : null;
  };
  Object.assign(hc, { pageLoad, labelsOf, queryAll, matches, closest, exists, ruleHolds, hasLabel, passes, candidates, usage, won, find,
    present, isStop, isDisabled, describe, ownMarker, hasMarker, oursByMarker, MARKER_USER_TURNS, composerText,
    squash, typed, observe, generatingIn, sendControl, soleComposer, messageId, threadFind, bodyOf, idOf });
})();
