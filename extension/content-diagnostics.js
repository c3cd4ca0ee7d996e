// Content script: diagnostics ("What the extension sees") — per fact the probe that won,
// missing-fact structure, CSP, recent outcomes; sized to the protocol's cap.
(() => {
  const hc = globalThis[Symbol.for('herdr-continuity.content')];
  if (!hc) return; // a second injection: the first copy runs
  const { caps: CAPS, messages: { page_to_worker: TO_WORKER } } = globalThis.herdrContracts; // extension/contracts.js
  const { host, pageLoad, exists, ruleHolds, candidates, usage, won, find, describe, observe, utf8 } = hc;

  // ---- Diagnostics ("What the extension sees"): the generation, per fact the probe that
  // matched, the CSP as a content script can observe it (violation events; whether a
  // <meta> policy exists — response headers are out of reach) and the last delivery
  // outcomes. No page content: selectors, ids and counts only.
  const csp = { violations: 0, directives: [] };
  document.addEventListener('securitypolicyviolation', (event) => {
    csp.violations += 1;
    const directive = String(event.effectiveDirective || event.violatedDirective || '').slice(0, 64);
    if (directive && !csp.directives.includes(directive) && csp.directives.length < 8) csp.directives.push(directive);
    scheduleDiagnostics();
  }, true);
  const recentOutcomes = [];
  // The winners a full recompute knows without a find() (a kept composer, the last reply
  // found probe by probe), counted like find()'s.
  function tally(seen) {
    if (!seen?.view) return;
    const hits = { composer: seen.composerHit, root: seen.rootHit, turn: seen.turns, user: seen.users, assistant: seen.last,
      streaming: seen.streaming, complete: seen.complete };
    for (const [fact, hit] of Object.entries(hits)) if (hit?.probe) won(fact, hit.probe);
    if (seen.turns?.listProbe) won('turn_list', seen.turns.listProbe);
  }
  // `usage`: per fact the chain entry that won last, the generations listing it, whether
  // the fact is served by a fallback, and how many recomputes that entry won. Served by a
  // fallback = the winner is a fallback probe (the profile's flag) and no primary probe of
  // the chain (one that leads some generation) finds the fact now: the primaries stopped
  // matching, which is what drift looks like. (A chain merged across generations may list
  // one generation's generic fallback before another's primary; winning that way while
  // the primary still matches is no drift.)
  const usageReport = (primaryFinds) => {
    const out = {};
    for (const [fact, { probe, wins }] of usage) {
      // The index in the profile's whole chain (a turn-generation view holds the same probes).
      const entry = hc.profile?.facts?.[fact]?.indexOf(probe) ?? -1;
      if (entry < 0) continue;
      out[fact] = {
        entry,
        gens: (Array.isArray(probe.gens) ? probe.gens : []).filter((g) => typeof g === 'string' && g.length <= 64).slice(0, 16),
        fallback: probe.fallback === true && !primaryFinds(fact),
        count: wins.get(probe) ?? 0,
      };
    }
    return out;
  };
  // `missing`: the shape of the region where a needed fact was looked for — tag names,
  // ARIA roles and data-* attribute NAMES with counts, breadth first over at most 200
  // elements from the region's top (our own HUD left out). Never text, never an attribute
  // value (a role is kept only as a plain ARIA token); each map keeps its 16 most frequent.
  const STRUCTURE_ELEMENTS = CAPS.structure_elements; // ext-core limits::MAX_STRUCTURE_ELEMENTS
  const STRUCTURE_KEYS = CAPS.structure_keys; // ext-core limits::MAX_STRUCTURE_KEYS
  const STRUCTURE_NAME = /^[a-z][a-z0-9_.:-]{0,63}$/;
  const structureOf = (region) => {
    const maps = { tags: new Map(), roles: new Map(), data_attrs: new Map() };
    const bump = (map, name) => { if (STRUCTURE_NAME.test(name)) map.set(name, (map.get(name) ?? 0) + 1); };
    const queue = region && region !== host ? [region] : [];
    for (let i = 0; i < queue.length; i++) {
      const el = queue[i];
      bump(maps.tags, el.localName);
      const role = (el.getAttribute('role') || '').trim().toLowerCase();
      if (role) bump(maps.roles, role);
      for (const name of el.getAttributeNames()) if (name.startsWith('data-')) bump(maps.data_attrs, name);
      for (let child = el.firstElementChild; child && queue.length < STRUCTURE_ELEMENTS; child = child.nextElementSibling) {
        if (child !== host) queue.push(child);
      }
    }
    const top = (map) => Object.fromEntries([...map].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, STRUCTURE_KEYS));
    return { elements: queue.length, tags: top(maps.tags), roles: top(maps.roles), data_attrs: top(maps.data_attrs) };
  };
  const upward = (el, levels) => {
    let node = el;
    for (let i = 0; i < levels && node?.parentElement && node.parentElement !== document.body; i++) node = node.parentElement;
    return node;
  };
  // The needed facts that are missing (docs/PROTOCOL.md "page_diagnostics"), each with the
  // region it was looked for in: composer → <main> (else <body>); root → three levels
  // above the composer; user → the turns' list. (Message ids are not a needed fact.)
  const missingReport = (seen, hits) => {
    if (!hc.profile) return {};
    const top = document.querySelector('main') ?? document.body;
    const out = {};
    if (!hits.composer) out.composer = structureOf(top);
    else if (seen.composer && !hits.root) out.root = structureOf(upward(seen.composer, 3));
    // As the adapter's own `unresolved` (observe()), every missing one rather than the first.
    const turns = seen.turns;
    if (turns?.tail?.length && !seen.users?.list.length && !seen.last) out.user = structureOf(turns.list ?? turns.tail[0].parentElement ?? top);
    if (seen.unresolved && seen.why === 'missing' && !(seen.unresolved in out) && Object.keys(out).length < 6) {
      out[seen.unresolved] = structureOf(top);
    }
    return out;
  };
  const diagnostics = () => {
    hc.usagePass += 1;
    const seen = observe();
    tally(seen);
    const out = {};
    let hits = {};
    if (seen.view) {
      hits = {
        composer: seen.composerHit,
        root: seen.rootHit,
        send: find(seen.view, 'send', { ...seen.ctx, controls: true }),
        stop: find(seen.view, 'stop', { ...seen.ctx, controls: true }),
        turn_list: seen.turns.list ? { probe: seen.turns.listProbe } : null,
        turn: seen.turns.probe ? { probe: seen.turns.probe } : null,
        user: seen.users.probe ? { probe: seen.users.probe } : null,
        assistant: seen.last ? { probe: seen.last.probe } : null,
        message_id: (() => {
          const el = seen.users.list[seen.users.list.length - 1];
          return el ? find(seen.view, 'message_id', { message: el }) : null;
        })(),
        assistant_body: seen.last ? find(seen.view, 'assistant_body', seen.ctx) : null,
        streaming: seen.streaming,
        complete: seen.complete,
      };
      for (const fact of Object.keys(seen.view.facts)) {
        const hit = fact in hits ? hits[fact] : find(seen.view, fact, seen.ctx);
        out[fact] = hit ? (fact === 'turn_list' && !hit.probe ? '(common ancestor of the turns)' : describe(hit.probe)) : null;
      }
    }
    // Whether a primary probe of the fact's chain finds it, where the adapter looks for it.
    const primaryFinds = (fact) => {
      const chain = seen.view?.facts[fact] ?? [];
      const lastUser = seen.users?.list[seen.users.list.length - 1];
      const where = {
        root: seen.composer ? { from: seen.composer } : null,
        turn_list: seen.turns?.tail[0] ? { from: seen.turns.tail[0] } : null,
        send: { ...seen.ctx, controls: true },
        stop: { ...seen.ctx, controls: true },
        message_id: lastUser ? { message: lastUser } : null,
      };
      const ctx = fact in where ? where[fact] : (seen.ctx ?? {});
      return Boolean(ctx) && chain.some((probe) => probe.fallback === false && candidates(seen.view, probe, ctx, false).length > 0);
    };
    return {
      type: TO_WORKER.page_diagnostics,
      page_load: pageLoad,
      site: hc.profile?.site ?? null,
      generation: seen.label,
      matching: (hc.profile?.generations ?? []).filter((gen) => ruleHolds(gen.detect)).map((gen) => gen.id),
      facts: out,
      usage: usageReport(primaryFinds),
      missing: missingReport(seen, hits),
      csp: { meta: exists('meta[http-equiv="Content-Security-Policy" i]'), violations: csp.violations, directives: [...csp.directives] },
      deliveries: recentOutcomes.slice(-5),
    };
  };
  // The worker refuses a page message over 16 KiB (ext-core limits::MAX_PAGE_MESSAGE_BYTES),
  // and the whole report with it: the parts that grow with the page or a profile shrink
  // until it fits — the missing facts' summaries keep fewer of their most frequent names,
  // then `usage` names fewer generations (entry, fallback and count always stay).
  const DIAGNOSTICS_BYTES = CAPS.page_message_bytes - 1024; // 1 KiB below the cap: the envelope and a margin
  const fitted = (report) => {
    const cutSummaries = (keep) => () => {
      for (const summary of Object.values(report.missing)) {
        for (const map of ['tags', 'roles', 'data_attrs']) summary[map] = Object.fromEntries(Object.entries(summary[map]).slice(0, keep));
      }
    };
    const cutGens = (keep) => () => { for (const u of Object.values(report.usage)) u.gens = u.gens.slice(0, keep); };
    for (const cut of [cutSummaries(8), cutSummaries(4), cutSummaries(0), cutGens(1), cutGens(0)]) {
      if (utf8.encode(JSON.stringify(report)).length <= DIAGNOSTICS_BYTES) break;
      cut();
    }
    return report;
  };
  let lastDiagnostics = '';
  let diagnosticsSent = 0;
  const sendDiagnostics = (force = false) => {
    const current = fitted(diagnostics());
    const json = JSON.stringify(current);
    if (!force && json === lastDiagnostics) return;
    lastDiagnostics = json;
    hc.port?.postMessage(current);
    host.dataset.diagnosticsSent = String(++diagnosticsSent);
  };
  // At most one diagnostics pass per 2 s: it evaluates every fact, not only the cheap ones.
  // While a reply streams it waits for the reply to end (the streaming page is where the
  // content script's cost is measured; a generation change and a delivery outcome are
  // still reported at once): asked for then, it is only marked due (no timer that would
  // fire into the stream to find it still streaming); the recompute that sees the reply
  // ended schedules it.
  let diagnosticsScheduled = false;
  hc.diagnosticsDeferred = false;
  const scheduleDiagnostics = () => {
    if (diagnosticsScheduled || !hc.profile) return;
    if (hc.lastGenerating) {
      hc.diagnosticsDeferred = true;
      return;
    }
    diagnosticsScheduled = true;
    setTimeout(() => {
      diagnosticsScheduled = false;
      if (hc.lastGenerating) hc.diagnosticsDeferred = true;
      else sendDiagnostics();
    }, 2000);
  };
  Object.assign(hc, { recentOutcomes, tally, sendDiagnostics, scheduleDiagnostics });
})();
