// Content script: the journal reader — the ended turn's text (caps as ext-core limits),
// the user's own Stop, and the visible thread's size for context pressure.
(() => {
  const hc = globalThis[Symbol.for('herdr-continuity.content')];
  if (!hc) return; // a second injection: the first copy runs
  const { caps: CAPS, messages: { page_to_worker: TO_WORKER } } = globalThis.herdrContracts; // extension/contracts.js
  const { pageLoad, isStop, ownMarker, oursByMarker, observe, messageId, threadFind, bodyOf, idOf } = hc;

  // ---- The ended turn (semantic Auto and the judge button, docs/PROTOCOL.md
  // "turn_ended"): the last user turn's text without our marker lines and the last reply's
  // text, each bounded (keeping the tail). Read only when a reply has ended (a full
  // recompute saw generating go false) or the judge button is pressed, never per mutation;
  // innerText (one layout read) keeps the reply's line structure for the judge.
  const TURN_USER_MAX = CAPS.turn_user_chars; // ext-core limits::MAX_TURN_USER_CHARS
  const TURN_ASSISTANT_MAX = CAPS.turn_assistant_chars; // ext-core limits::MAX_TURN_ASSISTANT_CHARS
  const MARKER_LINE = /^.*\[herdr-continuity [^\]\s]+(?: ref=[^\]\s]+)?\].*$/gm;
  const tailChars = (value, max) => {
    const chars = Array.from(value);
    return chars.length > max ? chars.slice(-max).join('') : value;
  };
  const readText = (el) => (el ? (el.innerText ?? el.textContent ?? '') : '').trim();
  // A reply as the JSON bridge must read it (issue 23: call lines inside Markdown code
  // fences are not calls). z.ai and DeepSeek render a fenced block as <pre><code>, and
  // innerText drops its fence lines: each <pre>'s text is put back between fence lines,
  // found in order in the reply's text as whole lines (a <pre> is a block: an inline copy
  // of its text, `like this` mid-sentence, is not it). The fence is one backtick longer
  // than the longest run in the code (at least three), so no line of the code closes it
  // (a ``` line in a Markdown example would, CommonMark). A block found only inside a line
  // (a site that lays a <pre> out inline) is fenced there, on lines of its own; one not
  // found at all is not shown (a collapsed one: its text is not in innerText either).
  const fenceFor = (code) => {
    let longest = 2;
    for (const run of code.matchAll(/`+/g)) longest = Math.max(longest, run[0].length);
    return '`'.repeat(longest + 1);
  };
  // Where `code` stands in `whole` from `from`: its first copy as whole lines, else its first
  // copy at all, else -1.
  const blockAt = (whole, code, from) => {
    const first = whole.indexOf(code, from);
    for (let found = first; found >= 0; found = whole.indexOf(code, found + 1)) {
      const end = found + code.length;
      if ((found === 0 || whole[found - 1] === '\n') && (end === whole.length || whole[end] === '\n')) return found;
    }
    return first;
  };
  const readReplyText = (el) => {
    const whole = readText(el);
    const blocks = el ? [...el.querySelectorAll('pre')].filter((pre) => !pre.parentElement?.closest('pre')) : [];
    if (!blocks.length) return whole;
    let out = '';
    let at = 0;
    for (const pre of blocks) {
      const code = (pre.innerText ?? pre.textContent ?? '').replace(/\n+$/, '');
      const found = code ? blockAt(whole, code, at) : -1;
      if (found < 0) continue;
      const before = whole.slice(at, found);
      const fence = fenceFor(code);
      out += `${before}${before === '' || before.endsWith('\n') ? '' : '\n'}${fence}\n${code}\n${fence}\n`;
      at = found + code.length;
      if (whole[at] === '\n') at += 1;
    }
    return (out + whole.slice(at)).trim();
  };
  // The journal's copy of a turn (C1: at most 64 KiB, ext-core
  // continuity::MAX_JOURNAL_TEXT_BYTES, counted as JSON: below): a longer turn keeps its start and its end around
  // a line that says how much was left out (the judge reads the end; the JSON bridge reads
  // only what comes before that line, ext-core continuity/bridge `bridge_text`).
  const JOURNAL_TEXT_BYTES = CAPS.journal_text_bytes;
  const utf8 = new TextEncoder();
  const bytesCut = (value, max, fromEnd) => {
    const bytes = utf8.encode(value);
    const part = fromEnd ? bytes.subarray(bytes.length - max) : bytes.subarray(0, max);
    return new TextDecoder().decode(part).replace(fromEnd ? /^\uFFFD+/ : /\uFFFD+$/, '');
  };
  // The cap counts the text as it crosses to the worker, JSON (its UTF-8 with every escape:
  // `"` and `\` take two bytes, a control character six), so that both turns' message stays
  // under the worker's cap of a `turn_ended` (ext-core limits MAX_TURN_MESSAGE_BYTES) and no
  // turn is dropped there. Six bytes a UTF-16 unit is the most JSON takes.
  const jsonBytes = (value) => utf8.encode(JSON.stringify(value)).length - 2;
  const journalText = (value) => {
    if (value.length * 6 <= JOURNAL_TEXT_BYTES || jsonBytes(value) <= JOURNAL_TEXT_BYTES) return value;
    const cutAt = (half) => {
      const head = bytesCut(value, half, false);
      const tail = bytesCut(value, half, true);
      return `${head}\n[… ${value.length - head.length - tail.length} characters left out by herdr-continuity …]\n${tail}`;
    };
    // Each side half of the cap in UTF-8, smaller while escapes make it longer; the last
    // try's sides fit even at six bytes a byte.
    let half = (JOURNAL_TEXT_BYTES >> 1) - 128;
    for (let tries = 0; tries < 4; tries += 1) {
      const cut = cutAt(half);
      const size = jsonBytes(cut);
      if (size <= JOURNAL_TEXT_BYTES) return cut;
      half = Math.floor(half * (JOURNAL_TEXT_BYTES - 512) / size);
    }
    return cutAt(Math.floor(JOURNAL_TEXT_BYTES / 12) - 128);
  };
  // `full` (a reply ended: the journal's copy, docs/PROTOCOL.md "turn_ended") or bounded
  // (the judge button).
  // `seen`: the page as the recompute that found the reply ended just read it (nothing has
  // changed the page since), else read now.
  const endedTurn = (full = false, seen = observe()) => {
    if (!seen.view) return { user_text: '', assistant_text: '', user_marker: null };
    const users = seen.users.list;
    const raw = readText(users[users.length - 1] ?? null);
    const marker = ownMarker(raw);
    const body = seen.last ? (bodyOf(seen) ?? seen.last.el) : null;
    const userText = raw.replace(MARKER_LINE, '').trim();
    const replyText = readReplyText(body);
    return {
      user_text: full ? journalText(userText) : tailChars(userText, TURN_USER_MAX),
      assistant_text: full ? journalText(replyText) : tailChars(replyText, TURN_ASSISTANT_MAX),
      user_marker: marker && marker.length <= CAPS.id_chars ? marker : null,
      // The reply's own id (the JSON bridge keys its calls by it, O2; the journal, C1).
      message_id: seen.last ? idOf(seen, seen.last.el) : null,
      user_message_id: users.length ? idOf(seen, users[users.length - 1]) : null,
    };
  };
  // FNV-1a, 64 bits, of the text's UTF-8 (as ext-core continuity/bridge text_turn_id).
  const textTurnId = (value) => {
    let hash = 0xcbf29ce484222325n;
    for (const byte of utf8.encode(value)) hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
    return `text:${hash.toString(16).padStart(16, '0')}`;
  };
  // The newest user turn that carries no marker of ours (a results message, a wake are
  // ours): the human's, from which the runtime counts tool rounds (M7) — its page id, else
  // `text:` and the hash of its text. A page fact, read from the thread every time, so a
  // worker restart in an Auto loop still knows it. A sent turn does not change: each is
  // read once.
  const humanTurns = new WeakMap(); // user turn element → its id, or '' when it is ours
  // The newest human user turn: `{ id, el }`, or null. Whose a turn is, is read from its
  // textContent, as the facts' markers are; its rendered text (innerText, which lays the
  // page out: on a long chat the submit's recompute paid for the whole page's layout) only
  // when the turn has no page id and its hash is the id.
  const humanTurn = (view, users) => {
    for (let i = users.length - 1; i >= 0 && i >= users.length - 64; i -= 1) {
      let id = humanTurns.get(users[i]);
      if (id === undefined) {
        const mid = messageId(view, users[i]);
        if (oursByMarker(users[i].textContent || '')) id = '';
        else if (mid && mid.length <= CAPS.id_chars) id = mid;
        else {
          const value = tailChars(readText(users[i]).replace(MARKER_LINE, '').trim(), TURN_USER_MAX);
          id = value ? textTurnId(value) : '';
        }
        humanTurns.set(users[i], id);
      }
      if (id) return { id, el: users[i] };
    }
    return null;
  };
  hc.wasGenerating = false;
  // The user turn count when the user pressed Stop (null: no Stop since the last turn end):
  // the turn that ends next with the same count is the one stopped (`turn_ended.user_stopped`
  // pins the Stop to its turn, whatever the worker heard of `user_stop`).
  let stoppedAt = null;
  const sendTurnEnded = (seen = observe()) => {
    const stopped = stoppedAt !== null && Boolean(seen.view) && seen.users.list.length === stoppedAt;
    stoppedAt = null;
    hc.send({ type: TO_WORKER.turn_ended, ...endedTurn(true, seen), user_stopped: stopped });
    sendThreadFacts(true, seen);
  };

  // ---- The user's own Stop (docs/PROTOCOL.md "user_stop"): a trusted activation (a
  // pointer press or click; Enter / Space on a focused button is a trusted click too) of the
  // element the profile's `stop` fact resolves to. Our own clicks are `element.click()`,
  // never trusted, and never on Stop. The worker marks the streaming reply as stopped by the
  // user: it is never continued automatically. Read only on a trusted click, never per
  // mutation.
  const onUserStop = (event) => {
    if (!event.isTrusted || !(event.target instanceof Element)) return;
    const seen = observe();
    if (!seen.view || !seen.stop) return;
    for (let el = event.target; el && el !== document.documentElement; el = el.parentElement) {
      if (isStop(seen.view, el)) {
        stoppedAt = seen.users.list.length;
        hc.postPress(() => ({ type: TO_WORKER.user_stop, page_load: pageLoad }));
        return;
      }
    }
  };
  document.addEventListener('pointerdown', onUserStop, true);
  document.addEventListener('click', onUserStop, true);

  // ---- The visible thread, for context pressure (R1, docs/PROTOCOL.md "thread_facts"):
  // how many turns, their characters (CJK apart) and the highest absolute turn index the
  // profile's `turn_index_attr` gives. Read once per page (URL) while no reply streams and
  // again when a reply ended — never per mutation.
  // ext-core context_pressure::is_cjk's ranges (a test checks they are the same).
  const CJK = /[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u{20000}-\u{2fa1f}]/gu;
  hc.threadShape = '';
  const turnChars = new WeakMap(); // turn element → [characters, CJK characters]
  const sendThreadFacts = (force, seen) => {
    if (!force && location.href === hc.threadShape) return;
    seen ??= observe();
    if (!seen.view) return;
    hc.threadShape = location.href;
    const turns = threadFind(seen.view, 'turn')?.list ?? [];
    let chars = 0;
    let cjk = 0;
    // A finished turn's text does not change: each is read once (the newest two again,
    // since a reply may still be growing there), so a long thread costs O(new turns).
    turns.forEach((turn, i) => {
      let counted = i < turns.length - 2 ? turnChars.get(turn) : undefined;
      if (!counted) {
        const value = turn.textContent || '';
        counted = [value.length, value.match(CJK)?.length ?? 0];
        turnChars.set(turn, counted);
      }
      chars += counted[0];
      cjk += counted[1];
    });
    const attr = hc.profile?.turn_index_attr;
    const index = attr && turns.length ? /(\d+)$/.exec(turns[turns.length - 1].getAttribute(attr) ?? '') : null;
    const highest = index ? Number(index[1]) : null;
    hc.port?.postMessage({ type: TO_WORKER.thread_facts, turns: turns.length, latin_chars: chars - cjk, cjk_chars: cjk,
      highest_turn: highest !== null && Number.isSafeInteger(highest) && highest < 2 ** 31 ? highest : null });
  };
  Object.assign(hc, { utf8, endedTurn, humanTurn, sendTurnEnded, sendThreadFacts });
})();
