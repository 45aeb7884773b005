// The audit log: every record as written, filters by server and event type, and a check of the
// hash chain.
import * as api from './api.js';
import { el, replace } from './dom.js';
import { notify } from './notice.js';
import { coalesce, asText, formatTime } from './util.js';

let serverSelect;
let eventSelect;
let body;
let summary;
let verdict;

export function init() {
  serverSelect = document.querySelector('select[name=audit-server]');
  eventSelect = document.querySelector('select[name=audit-event]');
  body = document.getElementById('audit-rows');
  summary = document.getElementById('audit-summary');
  verdict = document.getElementById('audit-verdict');
  serverSelect.addEventListener('change', () => refresh());
  eventSelect.addEventListener('change', () => refresh());
  document.querySelector('[data-action=verify-audit]').addEventListener('click', verify);
}

function fillOptions(select, values, allLabel) {
  const current = select.value;
  const all = [...new Set([...values, ...(current ? [current] : [])])].sort();
  replace(select, el('option', { value: '' }, allLabel), all.map((v) => el('option', { value: v, selected: v === current }, v)));
}

export const refresh = coalesce(async () => {
  const filter = { server: serverSelect.value, event: eventSelect.value };
  let everything;
  let records;
  try {
    // The unfiltered list feeds the filter choices; the filtering itself is Rust's.
    [everything, records] = filter.server || filter.event
      ? await Promise.all([api.auditList({}), api.auditList(filter)])
      : await api.auditList({}).then((all) => [all, all]);
  } catch (error) {
    notify(error);
    return;
  }
  fillOptions(serverSelect, everything.map((r) => r.server).filter(Boolean), 'All servers');
  fillOptions(eventSelect, everything.map((r) => r.event).filter(Boolean), 'All events');
  replace(summary, records.length === everything.length
    ? `${records.length} record${records.length === 1 ? '' : 's'}`
    : `${records.length} of ${everything.length} records`);
  if (records.length === 0) {
    replace(body, el('tr', {}, el('td', { colspan: '5', class: 'empty' }, 'No records.')));
    return;
  }
  // Newest first on screen; the log itself is oldest first.
  replace(body, [...records].reverse().map((r) =>
    el('tr', { 'data-testid': 'audit-row', 'data-event': r.event, 'data-server': r.server ?? null, 'data-seq': r.seq },
      el('td', { class: 'num' }, String(r.seq ?? '')),
      el('td', { class: 'nowrap' }, formatTime(r.time ?? r.ts)),
      el('td', {}, el('code', {}, r.event ?? '')),
      el('td', {}, r.server ?? ''),
      el('td', {}, el('pre', { class: 'data mono' }, asText(r.data ?? {}, 0))))));
});

async function verify() {
  const button = document.querySelector('[data-action=verify-audit]');
  button.disabled = true;
  replace(verdict, el('span', { class: 'muted' }, 'Checking the chain…'));
  try {
    const result = await api.auditVerify();
    replace(verdict, el('p', { class: `verdict tone-${result.ok ? 'good' : 'bad'}`, 'data-testid': 'audit-verify', 'data-ok': String(Boolean(result.ok)), 'data-records': result.records },
      el('span', { class: 'badge-icon', 'aria-hidden': 'true' }, result.ok ? '✓' : '✕'),
      result.ok
        ? `Chain intact: ${result.records} record${result.records === 1 ? '' : 's'} verified.`
        : [`Chain NOT intact (${result.records} records read). `,
          result.problem ? [el('code', {}, result.problem.code), ' ', result.problem.message] : null]));
  } catch (error) {
    replace(verdict, el('p', { class: 'verdict tone-bad', 'data-testid': 'audit-verify', 'data-ok': 'false' },
      'Could not verify: ', el('code', {}, error.code), ' ', error.message));
  } finally {
    button.disabled = false;
  }
}
