// The side panel's "Queue records kept aside" (issue 28): the records a Clear of an
// unreadable stored queue kept aside (herdrContinuityQueueV1Aside), as the worker's core
// sends them (ext-core `worker::aside`, `queue_aside {view}`). It decides nothing: the
// line, the texts, the confirm question and every key come from the view; a record's text
// is data, set as text (never markup) and copied whole. A removal is posted only from the
// confirm's Remove and names the question shown; Keep or Escape posts nothing.
import { button, element, errorText, message } from './page-dom.js';

const { messages: { panel_to_worker: TO_WORKER } } = globalThis.herdrContracts;

/** A status line of the view (`{key, substitutions, tone}`) as a paragraph. */
const statusLine = (line, attributes = {}) =>
  element('p', `line tone-${line.tone}`, { 'data-key': line.key, ...attributes }, message(line.key, line.substitutions));

/** One record: when it was kept, its line, its text's start, Copy text and Remove… with its confirm. */
function recordRow(record, view, post, status) {
  const cells = [];
  const at = record.kept_at != null ? new Date(record.kept_at) : null;
  // A time out of Date's range (a list edited by hand) is left out, not a section that fails.
  if (at && !Number.isNaN(at.getTime())) {
    cells.push(element('time', 'aside-time', { datetime: at.toISOString() }, at.toLocaleString()), ' ');
  }
  cells.push(element('span', '', { 'data-key': record.line.key }, message(record.line.key, record.line.substitutions)));
  if (record.preview != null) cells.push(element('code', 'aside-preview', { 'data-aside-preview': '' }, record.preview));
  // The value as stored: its text, or (a value that is not text) its JSON.
  const copied = record.text ?? JSON.stringify(record.value);
  const copy = button(message(view.copy), { 'data-aside-copy': record.id }, async () => {
    try {
      if (!navigator.clipboard) throw new Error('navigator.clipboard is not available');
      await navigator.clipboard.writeText(copied);
      status.textContent = message(view.copied);
    } catch (error) {
      status.textContent = message(view.copy_failed, [errorText(error)]);
    }
  });
  const question = element('p', '', { id: `aside-confirm-${record.id}` }, message(view.confirm));
  const confirm = element('div', 'aside-confirm', { role: 'alertdialog', 'aria-labelledby': question.id, 'data-aside-confirm': record.id });
  confirm.hidden = true;
  const remove = button(message(view.remove), { 'data-aside-remove': record.id, 'aria-expanded': 'false' }, () => {
    confirm.hidden = false;
    remove.setAttribute('aria-expanded', 'true');
    keep.focus();
  });
  const close = () => {
    confirm.hidden = true;
    remove.setAttribute('aria-expanded', 'false');
    remove.focus();
  };
  const yes = button(message(view.yes), { 'data-aside-yes': record.id }, () => {
    // The panel's port is down while the worker restarts: `post` throws, saying so; the
    // confirm stays open to press again.
    try {
      post({ type: TO_WORKER.queue_aside_remove, id: record.id, question: view.confirm });
    } catch (error) {
      status.textContent = errorText(error);
      return;
    }
    close();
  });
  const keep = button(message(view.no), { 'data-aside-no': record.id }, close);
  confirm.append(question, yes, keep);
  confirm.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') close();
  });
  return element('li', 'line tone-warning', { 'data-aside-record': record.id }, ...cells,
    element('div', 'actions', {}, copy, remove), confirm);
}

/** The region's content for a `queue_aside` message: nothing while none is kept and nothing to say. */
export function queueAsideView({ view }, post, region) {
  region.setAttribute('data-aside-count', String(view.records.length));
  if (view.line == null && view.notice == null) return [];
  const nodes = [element('h2', '', {}, message(view.title))];
  if (view.line != null) nodes.push(statusLine(view.line, { 'data-aside-line': '' }));
  if (view.notice != null) nodes.push(statusLine(view.notice, { role: 'status', 'data-aside-notice': '' }));
  const status = element('p', '', { role: 'status', 'data-aside-status': '' });
  nodes.push(element('ul', 'aside-records', { 'data-aside-records': '' }, ...view.records.map((record) => recordRow(record, view, post, status))), status);
  return nodes;
}
