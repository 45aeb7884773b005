// The AI clients that use Gatehouse through `gatehouse serve`: which are connected now and
// their recent calls, as the gate recorded them. Everything shown is text: a client's id is
// Gatehouse's, the name it claims is only claimed.
import * as api from './api.js';
import { el, replace } from './dom.js';
import { notify } from './notice.js';
import { coalesce, formatTime } from './util.js';

let list;

export function init() {
  list = document.getElementById('client-list');
}

function callRow(call) {
  return el('tr', { 'data-testid': 'client-call', 'data-decision': call.decision, 'data-tool': call.tool, 'data-server': call.server },
    el('td', { class: 'nowrap' }, formatTime(call.time)),
    el('td', {}, call.server),
    el('td', {}, el('code', {}, call.tool)),
    el('td', {}, call.decision === 'allowed'
      ? el('span', { class: 'badge tone-good' }, 'allowed')
      : [el('span', { class: 'badge tone-bad' }, 'denied'), ' ', el('code', {}, call.code ?? '')]),
    el('td', { class: 'muted' }, call.transport));
}

function clientCard(row) {
  const connected = row.connected.length > 0;
  return el('article', { class: 'client-card', 'data-testid': 'client', 'data-client': row.client, 'data-connected': String(connected) },
    el('header', { class: 'card-head' },
      el('h3', { class: 'card-title' }, el('strong', {}, row.client)),
      el('span', { class: `badge tone-${connected ? 'good' : 'idle'}`, 'data-testid': 'client-state' },
        connected ? `connected over ${row.connected.join(', ')}` : 'not connected')),
    row.claimed ? el('p', { class: 'muted' }, `It says it is ${row.claimed}.`) : null,
    row.recentCalls.length === 0
      ? el('p', { class: 'empty' }, 'No calls yet.')
      : el('div', { class: 'table-wrap' },
        el('table', { class: 'client-calls' },
          el('thead', {}, el('tr', {},
            el('th', { scope: 'col' }, 'Time'), el('th', { scope: 'col' }, 'Server'),
            el('th', { scope: 'col' }, 'Tool'), el('th', { scope: 'col' }, 'Gate'),
            el('th', { scope: 'col' }, 'Over'))),
          el('tbody', {}, row.recentCalls.map(callRow)))));
}

export const refresh = coalesce(async () => {
  let rows;
  try {
    rows = await api.clientsList();
  } catch (error) {
    notify(error);
    return;
  }
  replace(list, rows.length === 0
    ? el('p', { class: 'empty' }, 'No AI client has used Gatehouse yet. Point one at `gatehouse serve` (gatehouse clients connect CLIENT).')
    : rows.map(clientCard));
});
