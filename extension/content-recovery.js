// Content script: recovery facts (stalls, reasoning placeholders, the site's retry
// button) and the conversation snapshot probe the worker's recovery planner asks for.
(() => {
  const hc = globalThis[Symbol.for('herdr-continuity.content')];
  if (!hc) return; // a second injection: the first copy runs
  const { caps: CAPS, messages: { page_to_worker: TO_WORKER } } = globalThis.herdrContracts; // extension/contracts.js
  const { pageLoad, labelsOf, find, present, isDisabled, ownMarker, observe, generatingIn, idOf, bodyOf, scheduleFacts } = hc;

  // ---- Recovery (docs/PROTOCOL.md "Recovery"): the facts the worker's recovery planner
  // reads (the last assistant message, a user turn waiting, a send-timeout card, a
  // rate-limit notice), the snapshot probe it asks for and the two page actions it may
  // order. Whether and when is decided there; this only reads and carries out. The
  // session's access token lives in this closure only: never stored, never posted.
  hc.lastRecovery = '';
  let accessToken = null;
  // The signed-in account's id from the session JSON (`user.id`, else `account.id`; kept as
  // `hc.account`, set up in content-hud.js, and page_facts carries it): the worker paces
  // backend reads per account.
  const accountOf = (session) => [session?.user?.id, session?.account?.id]
    .find((id) => typeof id === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(id)) ?? null;
  // `Retry-After` in ms: delta-seconds or an HTTP date; null when absent or unreadable.
  // `Retry-After`: delay-seconds (a fraction too, rounded up), or an HTTP date, which always
  // names its month (V8's Date.parse reads "600.5" as the year 600: a cooldown of 0).
  // Anything else is no header: the core's back-off step applies.
  const retryAfterMs = (value) => {
    if (typeof value !== 'string' || value.trim() === '') return null;
    if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.ceil(Number(value.trim()) * 1000);
    if (!/[A-Za-z]{3}/.test(value)) return null;
    const at = Date.parse(value);
    return Number.isFinite(at) ? Math.max(0, at - Date.now()) : null;
  };
  let probing = false;
  const PROBE_TIMEOUT_MS = 10000; // plumbing around one request, like PLUMBING_WAIT_MS
  // FNV-1a of the body's tail with its length: changes when the text does.
  const signatureOf = (value) => {
    let hash = 0x811c9dc5;
    for (let i = Math.max(0, value.length - 512); i < value.length; i++) hash = Math.imul(hash ^ value.charCodeAt(i), 0x01000193) >>> 0;
    return `${value.length}:${hash.toString(36)}`;
  };
  // A card's text: a probe that matched its button reads the card around it.
  const showsLabel = (view, key, el) => {
    const card = el?.tagName === 'BUTTON' ? el.parentElement : el;
    const value = (card?.textContent || '').toLowerCase();
    return labelsOf(view, key).some((label) => value.includes(label));
  };
  // The snapshot comparison's lengths: normalised text on both sides (plain-text.js).
  const { plainLength, markdownPlain } = globalThis[Symbol.for('herdr-continuity.plain-text')];
  const REASONING_TURN_MAX_CHARS = 40; // a thinking placeholder, not a reply that mentions thinking
  // The assistant turn's whole text is a `reasoning` label ("Thinking", "Thinking…",
  // "Pro thinking 12s"), never a reply that merely contains the word.
  const isReasoningPlaceholder = (view, el) => {
    const content = (el.textContent || '').trim().toLowerCase();
    return content.length > 0 && content.length <= REASONING_TURN_MAX_CHARS
      && labelsOf(view, 'reasoning').some((label) => content.startsWith(label));
  };
  const recoveryFacts = (seen) => {
    const last = seen.last;
    const body = last ? (bodyOf(seen) ?? last.el) : null;
    const bodyText = body?.textContent ?? '';
    const users = seen.users.list;
    const lastUser = users[users.length - 1] ?? null;
    const generating = generatingIn(seen);
    // Error cards and notices are looked for only while nothing streams.
    const error = generating ? null : find(seen.view, 'thread_error', seen.ctx);
    const sendTimeout = Boolean(error && showsLabel(seen.view, 'send_timeout', error.el));
    const userWaiting = Boolean(lastUser && (!last || lastUser.compareDocumentPosition(last.el) & Node.DOCUMENT_POSITION_PRECEDING));
    // The delivery id of our own marker line in the waiting user turn (the last marker outside
    // any data fence): the worker may send that message of ours again when the server proves
    // it never got it (never a human's turn).
    const waitingMarker = userWaiting ? (ownMarker(lastUser.textContent || '') ?? null) : null;
    return {
      type: TO_WORKER.recovery_facts,
      page_load: pageLoad,
      assistant: Boolean(last),
      assistant_id: last ? idOf(seen, last.el) : null,
      assistant_len: plainLength(bodyText),
      assistant_streaming: Boolean(seen.streaming) || Boolean(generating && last && !seen.complete),
      signature: signatureOf(bodyText),
      user_waiting: userWaiting,
      waiting_marker: waitingMarker,
      send_timeout: sendTimeout,
      retry_offered: sendTimeout && present(seen.view, 'retry', seen.ctx),
      rate_limited: !generating && present(seen.view, 'rate_limit', seen.ctx),
      // SITES-2026 §1.4: while Stop is shown, a short assistant turn that names the model
      // thinking (the profile's `reasoning` labels) is progress, not a stall.
      // Only the reply being written counts (no user turn waits after it), and only when
      // its whole text is the placeholder: equal to, or starting with, a label.
      reasoning: Boolean(generating && last && !userWaiting && isReasoningPlaceholder(seen.view, last.el)),
    };
  };
  const sendRecoveryFacts = (seen) => {
    const current = recoveryFacts(seen);
    const json = JSON.stringify(current);
    if (json === hc.lastRecovery) return;
    hc.lastRecovery = json;
    hc.port?.postMessage(current);
  };
  // One GET from the page's origin (cookies included), bounded in time; the body is read
  // here and never leaves this script.
  const getJson = async (path, headers) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), PROBE_TIMEOUT_MS);
    try {
      const response = await fetch(path, { headers, credentials: 'include', cache: 'no-store', signal: controller.signal });
      const status = response.status;
      if (status === 429) return { status, failure: 'http_429', retry_after_ms: retryAfterMs(response.headers.get('retry-after')) };
      if (!response.ok) return { status, failure: [401, 403].includes(status) ? `http_${status}` : status >= 500 ? 'http_5xx' : 'http_4xx' };
      try { return { status, body: await response.json() }; } catch { return { status, failure: controller.signal.aborted ? 'timeout' : 'odd_shape' }; }
    } catch {
      return { failure: controller.signal.aborted ? 'timeout' : 'network' };
    } finally {
      clearTimeout(timer);
    }
  };
  // The snapshot's current node, summarised (REFERENCE §3); anything else is odd.
  const summarize = (body) => {
    const message = typeof body?.current_node === 'string' ? body.mapping?.[body.current_node]?.message : null;
    const role = message?.author?.role;
    if (!message || typeof message.id !== 'string' || message.id === '' || typeof role !== 'string') return { failure: 'odd_shape' };
    const parts = Array.isArray(message.content?.parts) ? message.content.parts : [];
    return {
      node_id: message.id.slice(0, CAPS.id_chars),
      role: role === 'user' || role === 'assistant' ? role : 'other',
      text_len: plainLength(markdownPlain(parts.filter((part) => typeof part === 'string').join('\n'))),
      finished: message.end_turn === true || message.status === 'finished_successfully',
      update_time: Number.isFinite(message.update_time) ? message.update_time : null,
    };
  };
  const snapshotProbe = async (conversationId) => {
    const answer = (fields) => hc.port?.postMessage({ type: TO_WORKER.snapshot_result, page_load: pageLoad, ...fields });
    if (probing) return;
    if (typeof conversationId !== 'string' || !/^[0-9A-Za-z-]{1,64}$/.test(conversationId)) { answer({ failure: 'odd_shape' }); return; }
    probing = true;
    try {
      if (!accessToken) {
        const session = await getJson('/api/auth/session', {});
        if (session.failure) { answer({ failure: session.failure, retry_after_ms: session.retry_after_ms ?? null }); return; }
        accessToken = typeof session.body?.accessToken === 'string' && session.body.accessToken !== '' ? session.body.accessToken : null;
        // Rides on the next page_facts (a report of its own would be a fresh look at a page
        // the planner is judging: it goes with the next change the page shows).
        hc.account = accountOf(session.body);
        if (!accessToken) { answer({ failure: 'no_token' }); return; }
      }
      const snapshot = await getJson(`/backend-api/conversation/${conversationId}`, { authorization: `Bearer ${accessToken}` });
      if (snapshot.status === 401) accessToken = null;
      answer(snapshot.failure ? { failure: snapshot.failure, retry_after_ms: snapshot.retry_after_ms ?? null } : summarize(snapshot.body));
    } finally {
      probing = false;
    }
  };
  // ChatGPT's own Retry, only beside a send-timeout card and only while it is enabled.
  const clickRetry = () => {
    const seen = observe();
    if (seen.unresolved !== null || generatingIn(seen)) return;
    const error = find(seen.view, 'thread_error', seen.ctx);
    if (!error || !showsLabel(seen.view, 'send_timeout', error.el)) return;
    const retry = find(seen.view, 'retry', seen.ctx)?.el;
    if (retry && !isDisabled(seen.view, retry)) retry.click();
    scheduleFacts();
  };
  Object.assign(hc, { signatureOf, sendRecoveryFacts, snapshotProbe, clickRetry });
})();
