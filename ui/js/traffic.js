// Raw JSON-RPC traffic per server, as the host's tap recorded it.
import * as api from './api.js';
import { el, replace } from './dom.js';
import { notify } from './notice.js';
import { coalesce, formatTime } from './util.js';

// Rendering thousands of rows would make the window sluggish; the newest ones matter most.
const MAX_ROWS = 500;

let serverSelect;
let filterInput;
let list;
let summary;
let entries = [];
let serverNames = [];

// The desk's TrafficEntry carries the parsed `message` and an RFC 3339 `time`;
// docs/desktop-api.md names them `text` and `at`. Either is read.
function entryText(entry) {
  if (typeof entry.text === 'string') return entry.text;
  if (typeof entry.message === 'string') return entry.message;
  return JSON.stringify(entry.message ?? null);
}

export function init() {
  serverSelect = document.querySelector('select[name=traffic-server]');
  filterInput = document.querySelector('input[name=traffic-filter]');
  list = document.getElementById('traffic-rows');
  summary = document.getElementById('traffic-summary');
  serverSelect.addEventListener('change', () => refresh());
  filterInput.addEventListener('input', render);
  list.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-action=copy]');
    if (button) copy(button, button.closest('[data-testid=traffic-row]').querySelector('pre'));
  });
}

/** Server names for the filter, from the Servers view (traffic may not have any yet). */
export function setServers(names) {
  serverNames = names;
  fillServers();
}

function fillServers() {
  const current = serverSelect.value;
  const names = [...new Set([...serverNames, ...entries.map((e) => e.server), ...(current ? [current] : [])])].sort();
  replace(serverSelect, el('option', { value: '' }, 'All servers'), names.map((n) => el('option', { value: n, selected: n === current }, n)));
}

export const refresh = coalesce(async () => {
  try {
    entries = await api.trafficList(serverSelect.value);
  } catch (error) {
    notify(error);
    return;
  }
  fillServers();
  render();
});

function render() {
  const needle = filterInput.value.trim().toLowerCase();
  const matching = needle ? entries.filter((e) => entryText(e).toLowerCase().includes(needle)) : entries;
  const shown = matching.slice(-MAX_ROWS);
  replace(summary, matching.length === shown.length
    ? `${shown.length} message${shown.length === 1 ? '' : 's'}`
    : `the latest ${shown.length} of ${matching.length} messages`);
  if (shown.length === 0) {
    replace(list, el('li', { class: 'empty' }, entries.length === 0 ? 'No traffic yet.' : 'Nothing matches the filter.'));
    return;
  }
  replace(list, shown.map((e) =>
    el('li', { class: `traffic-row dir-${e.direction}`, 'data-testid': 'traffic-row', 'data-direction': e.direction, 'data-server': e.server },
      el('div', { class: 'traffic-head' },
        el('span', { class: `dir dir-${e.direction}` }, e.direction === 'out' ? '→ to server' : '← from server'),
        el('strong', {}, e.server ?? ''),
        e.era ? el('span', { class: 'muted' }, e.era) : null,
        el('span', { class: 'muted' }, formatTime(e.at ?? e.time)),
        el('span', { class: 'spacer' }),
        el('button', { type: 'button', class: 'secondary small', 'data-action': 'copy' }, 'Copy')),
      el('pre', { class: 'traffic-text mono', tabindex: '0' }, entryText(e)))));
}

async function copy(button, pre) {
  try {
    await navigator.clipboard.writeText(pre.textContent);
    button.textContent = 'Copied';
    button.dataset.copied = 'clipboard';
  } catch {
    // No clipboard permission: select the text so Ctrl+C copies it.
    pre.focus();
    const range = document.createRange();
    range.selectNodeContents(pre);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    button.textContent = 'Selected: press Ctrl+C';
    button.dataset.copied = 'selected';
  }
  setTimeout(() => {
    button.textContent = 'Copy';
    delete button.dataset.copied;
  }, 2000);
}
