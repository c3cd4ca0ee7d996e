// The snapshot comparison's text normalisation (PROTOCOL.md "Recovery", issue 26 Found 7),
// loaded before content.js. The stale-view probe compares the server's current node with
// the page's last assistant message; the server holds markdown, the page shows its
// rendering, so raw lengths made a finished reply with links, lists or tables read as
// "server ahead". Both sides are compared as normalised text instead:
// - `plainLength(text)`: the characters that are not whitespace (nor zero-width): the
//   page's line breaks, list indents and table cells differ from the markdown's;
// - `markdownPlain(markdown)`: the markdown without what a renderer turns into layout —
//   code-fence lines, heading / quote / list / task markers, emphasis and code marks,
//   table pipes and rules, horizontal rules, HTML tags, a link's or an image's target (its
//   text stays) and ChatGPT's private-use citation tokens (U+E200 … U+E201).
// The page adds text of its own (a code block's language and "Copy code"), so a rendered
// reply is never shorter than its normalised markdown; a real "server ahead" (the page
// froze half-way) stays clearly longer. Pure functions, no DOM, no state.
(() => {
  const KEY = Symbol.for('herdr-continuity.plain-text');
  if (globalThis[KEY]) return;
  const plainLength = (value) => value.replace(/[\s\u200b-\u200d\ufeff]+/g, '').length;
  const markdownPlain = (value) => value
    .replace(/^[ \t]*(```|~~~).*$/gm, '')
    .replace(/\ue200[^\ue201]*\ue201/g, '')
    .replace(/!?\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+"[^"\n]*")?\)/g, '$1')
    .replace(/<(https?:[^>\s]+)>/g, '$1')
    .replace(/<\/?[A-Za-z][^>\n]*>/g, '')
    .replace(/^[ \t]*(#{1,6}[ \t]+|(>[ \t]?)+|[-*+][ \t]+(\[[ xX]\][ \t]+)?|\d{1,9}[.)][ \t]+)/gm, '')
    .replace(/^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$/gm, '')
    .replace(/^[ \t]*([-*_][ \t]*){3,}$/gm, '')
    .replace(/(\*\*|__|~~|`+)/g, '')
    .replace(/\|/g, '');
  globalThis[KEY] = Object.freeze({ plainLength, markdownPlain });
})();
