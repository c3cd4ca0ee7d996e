// The snapshot comparison's text normalisation (PROTOCOL.md "Recovery", issue 26 Found 7),
// loaded before content.js. The stale-view probe compares the server's current node with
// the page's last assistant message; the server holds markdown, the page shows its
// rendering, so raw lengths made a finished reply with links, lists or tables read as
// "server ahead". Both sides are compared as normalised text instead:
// - `plainLength(text)`: the characters that are not whitespace (nor zero-width): the
//   page's line breaks, list indents and table cells differ from the markdown's;
// - `markdownPlain(markdown)`: the markdown without what a renderer turns into layout or
//   hides. A code block's lines stay verbatim (only its fence lines go: the page shows the
//   code as it is). Outside code: heading / quote / list / task markers, emphasis and code
//   marks, the pipes of table rows (lines that start with `|`) and table rules,
//   horizontal rules, real HTML tags (known tag names; `Vec<String>` stays), a link's
//   target (its text stays), images (the page shows no text for them), reference-style
//   link definition lines, backslash escapes (`\_` is `_`), the common entities (`&amp;`
//   is `&`) and ChatGPT's private-use citation tokens (U+E200 … U+E201).
// The page adds text of its own (a code block's language and "Copy code"), so a rendered
// reply is never shorter than its normalised markdown; a real "server ahead" (the page
// froze half-way) stays clearly longer. Pure functions, no DOM, no state.
(() => {
  const KEY = Symbol.for('herdr-continuity.plain-text');
  if (globalThis[KEY]) return;
  const plainLength = (value) => value.replace(/[\s\u200b-\u200d\ufeff]+/g, '').length;
  const ENTITY = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'" };
  const HTML_TAG = /<\/?(?:a|abbr|b|blockquote|br|center|code|del|details|div|em|font|h[1-6]|hr|i|img|ins|kbd|li|mark|ol|p|pre|q|s|samp|small|span|strike|strong|sub|summary|sup|table|tbody|td|tfoot|th|thead|tr|tt|u|ul|var)(?:\s[^<>\n]*)?\/?>/gi;
  const TARGET = '\\((?:[^()\\s]|\\([^()\\s]*\\))*(?:\\s+"[^"\\n]*")?\\)';
  const IMAGE = new RegExp(`!\\[[^\\]\\n]*\\](?:${TARGET}|\\[[^\\]\\n]*\\])`, 'g');
  const LINK = new RegExp(`\\[([^\\]\\n]*)\\]${TARGET}`, 'g');
  const inline = (line) => line
    .replace(IMAGE, '')
    .replace(LINK, '$1')
    .replace(/\[([^\]\n]+)\]\[[^\]\n]*\]/g, '$1')
    .replace(/<(https?:[^>\s]+)>/g, '$1')
    .replace(HTML_TAG, '')
    .replace(/^[ \t]*(#{1,6}[ \t]+|(>[ \t]?)+|[-*+][ \t]+(\[[ xX]\][ \t]+)?|\d{1,9}[.)][ \t]+)/, '')
    .replace(/(\*\*|__|~~|`+)/g, '')
    .replace(/\\([!-/:-@[-`{-~])/g, '$1')
    .replace(/&(amp|lt|gt|quot|apos|nbsp|#39);/g, (_, name) => ENTITY[name]);
  const markdownPlain = (value) => {
    const out = [];
    let fence = null; // the open code fence's marker (``` or ~~~), or null
    for (const line of value.replace(/\ue200[^\ue201]*\ue201/g, '').split('\n')) {
      const opener = /^[ \t]*(`{3,}|~{3,})/.exec(line);
      if (fence !== null) {
        if (opener && opener[1][0] === fence[0] && opener[1].length >= fence.length && line.trim() === opener[1]) fence = null;
        else out.push(line);
        continue;
      }
      if (opener) { fence = opener[1]; continue; }
      if (/^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*\S+/.test(line)) continue; // a reference-style link definition
      if (/^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$/.test(line)) continue; // a table rule
      if (/^[ \t]*([-*_][ \t]*){3,}$/.test(line)) continue; // a horizontal rule
      const text = inline(line);
      out.push(/^[ \t]*\|/.test(line) ? text.replace(/\|/g, '') : text);
    }
    return out.join('\n');
  };
  globalThis[KEY] = Object.freeze({ plainLength, markdownPlain });
})();
