// What the extension pages (sidepanel.js, options.js) share: texts from _locales and a
// small element builder. The pages load no wasm: they render what the worker computed
// (side panel) or edit chrome.storage (options), so they open without compiling anything.

/**
 * chrome.i18n.getMessage(key, substitutions); a missing message shows its key (and the
 * substitutions), so a gap in a locale is visible rather than blank.
 */
export function message(key, substitutions = []) {
  let text = '';
  try {
    text = chrome.i18n.getMessage(key, substitutions);
  } catch {
    // No chrome.i18n (the extension context is gone): fall back to the key below.
  }
  if (text) return text;
  return substitutions.length ? `${key}: ${substitutions.join(', ')}` : key;
}

/**
 * A new element: `className` ('' for none), `attributes` set as given (data-* hooks), and
 * children (strings become text).
 */
export function element(tag, className = '', attributes = {}, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

/** A `<button type=button class=action>` that calls `onClick` (mouse, Enter, Space). */
export function button(label, attributes, onClick) {
  const node = element('button', 'action', { type: 'button', ...attributes }, label);
  node.addEventListener('click', onClick);
  return node;
}

/** A polite live region (`role=status`) for what a page reports back. */
export function statusRegion(className, attributes = {}) {
  return element('p', className, { role: 'status', 'aria-live': 'polite', ...attributes });
}

/** The text of a thrown value or a rejected promise's reason. */
export function errorText(error) {
  return error instanceof Error ? error.message : String(error ?? 'unknown error');
}

/**
 * Translates the static text (`[data-i18n]`, the page title), then runs `mount(app)` on
 * `#app`; a page that fails to start says so in `#app`.
 */
export function startPage(mount) {
  const app = document.getElementById('app');
  try {
    for (const node of document.querySelectorAll('[data-i18n]')) node.textContent = message(node.dataset.i18n);
    mount(app);
  } catch (error) {
    app.textContent = message('pageLoadFailed', [errorText(error)]);
  }
}
