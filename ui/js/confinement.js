// A server's confinement in its detail (issue 28): what it can read, write and reach, or
// "unconfined" and why, drawn as text from the host's ConfinementView. For a server whose grants
// are not its admission's (one you run unattested), a small form loosens its default
// confinement; the host checks every value, records the change and starts the server again
// under it when next used.
import * as api from './api.js';
import { el } from './dom.js';

const STATES = {
  confined: { label: 'Confined', tone: 'good', icon: '✓' },
  unconfined: { label: 'Unconfined', tone: 'warn', icon: '!' },
  not_applicable: { label: 'Not applicable', tone: 'idle', icon: '–' },
};

const SOURCES = {
  admission: 'its admission (the bundle entry, its attestation, its binding)',
  person: 'your settings',
  default: 'the default for a server nobody admitted: nothing of yours, no network',
};

function list(values) {
  return Array.isArray(values) ? values.map(String) : [];
}

function networkText(network) {
  const kind = network?.kind;
  if (kind === 'none') return 'None';
  if (kind === 'any') return 'Any host (your network)';
  if (kind === 'hosts') {
    const hosts = list(network.hosts);
    return hosts.length > 0 ? hosts.join(', ') : 'None';
  }
  return String(kind ?? '');
}

function processesText(n) {
  const count = Number(n) || 0;
  if (count === 0) return 'None (threads only)';
  return count === 1 ? 'Up to 1' : `Up to ${count}`;
}

function row(name, label, value) {
  // An empty value stays an empty element (the stylesheet shows a dash).
  return el('div', { class: 'field-row' },
    el('dt', {}, label),
    el('dd', { 'data-field': name, class: name === 'read' || name === 'write' || name === 'code' ? 'mono' : null }, value ?? ''));
}

/**
 * The "Confinement" block: `view` is the detail's `confinement` (null when the host could not
 * say), `server` the server's name, `onSaved` what to do once the person's settings are saved.
 */
export function confinementSection(view, server, onSaved) {
  if (!view || typeof view !== 'object') {
    return el('div', { class: 'confinement', 'data-testid': 'confinement', 'data-state': 'unknown' },
      el('p', { class: 'muted' }, 'Gatehouse cannot say yet how this server is confined.'));
  }
  const state = STATES[view.state] ?? { label: String(view.state), tone: 'idle', icon: '?' };
  const setBy = list(view.mode_set_by);
  const head = el('p', { class: 'confinement-head' },
    el('span', { class: `badge tone-${state.tone}`, 'data-testid': 'confinement-state' },
      el('span', { class: 'badge-icon', 'aria-hidden': 'true' }, state.icon), state.label),
    ' ',
    el('span', { class: 'muted' }, `mode ${view.mode ?? ''}`, setBy.length > 0 ? `, set by ${setBy.join(', ')}` : ''));
  const fields = [];
  if (view.state === 'confined') {
    const read = list(view.read);
    const write = list(view.write);
    const code = list(view.code);
    fields.push(
      row('read', 'Can read', read.length > 0 ? read.join(', ') : 'None of your files'),
      row('write', 'Can write', write.length > 0 ? write.join(', ') : 'None of your files'),
      row('network', 'Can reach', networkText(view.network)),
      row('processes', 'Processes', processesText(view.processes)),
      row('memory', 'Memory', `${Number(view.memory_mib) || 0} MiB`),
      code.length > 0 ? row('code', 'Its own code', `${code.join(', ')} (read-only)`) : null,
      row('grants', 'Granted by', SOURCES[view.grants_from] ?? String(view.grants_from ?? '')));
  } else if (view.state === 'unconfined') {
    fields.push(row('unconfined', 'Can reach', 'Whatever you can: your files, your network, your sessions'));
  }
  const editable = view.state !== 'not_applicable' && view.grants_from !== 'admission';
  return el('div', { class: `confinement confinement-${state.tone}`, 'data-testid': 'confinement', 'data-state': view.state ?? '', 'data-grants-from': view.grants_from ?? '' },
    head,
    view.detail ? el('p', { 'data-testid': 'confinement-detail' }, view.detail) : null,
    fields.length > 0 ? el('dl', { class: 'fields' }, fields) : null,
    view.grants_from === 'admission'
      ? el('p', { class: 'muted' }, 'Your admins decide this server’s confinement: it is admitted, so your own settings do not apply to it.')
      : null,
    editable ? confinementForm(view, server, onSaved) : null);
}

/** One value per non-empty line, trimmed. */
function lines(text) {
  return text.split('\n').map((line) => line.trim()).filter((line) => line !== '');
}

function confinementForm(view, server, onSaved) {
  const mine = view.grants_from === 'person';
  const hosts = view.network?.kind === 'hosts' ? list(view.network.hosts) : [];
  const area = (name, label, values, hint) => {
    const input = el('textarea', { name, rows: '3', spellcheck: 'false', 'data-testid': `confine-${name}`, 'aria-describedby': `confine-${name}-hint` });
    input.value = mine ? values.join('\n') : '';
    return [el('label', { class: 'stack' }, label, input), el('p', { class: 'muted small', id: `confine-${name}-hint` }, hint), input];
  };
  const [readLabel, readHint, read] = area('read', 'Can read (one path per line)', list(view.read), 'An absolute path, or ~/DIR under your home. Read-only.');
  const [writeLabel, writeHint, write] = area('write', 'Can write (one path per line)', list(view.write), 'Readable and writable.');
  const [hostsLabel, hostsHint, hostsInput] = area('hosts', 'Can reach (one host:port per line)', hosts, 'For example api.example.com:443. Nothing else is reachable.');
  const anyHost = el('input', { type: 'checkbox', name: 'any-host', 'data-testid': 'confine-any-host' });
  anyHost.checked = mine && view.network?.kind === 'any';
  const unconfined = el('input', { type: 'checkbox', name: 'unconfined', 'data-testid': 'confine-unconfined' });
  unconfined.checked = view.reason === 'person_turned_off';
  const error = el('p', { class: 'form-error', role: 'alert', 'data-testid': 'confine-error', hidden: true });
  const save = el('button', { type: 'submit', class: 'small', 'data-action': 'confine-save' }, 'Save');
  const sync = () => {
    for (const input of [read, write, hostsInput, anyHost]) input.disabled = unconfined.checked;
    hostsInput.disabled = unconfined.checked || anyHost.checked;
  };
  unconfined.addEventListener('change', sync);
  anyHost.addEventListener('change', sync);
  sync();
  const form = el('form', { class: 'confine-form', 'data-testid': 'confine-form' },
    el('p', { class: 'muted' }, 'Loosen this server’s confinement. Saving starts it again under the new settings; an empty form gives it the default again. Every change is in the audit log.'),
    readLabel, readHint, writeLabel, writeHint, hostsLabel, hostsHint,
    el('label', { class: 'check' }, anyHost, ' Any host (it shares your network)'),
    el('label', { class: 'check' }, unconfined, ' Unconfined: it can read, write and reach whatever you can'),
    error,
    el('div', { class: 'actions' }, save));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    save.disabled = true;
    error.hidden = true;
    const confinement = unconfined.checked
      ? { unconfined: true }
      : { read: lines(read.value), write: lines(write.value), hosts: anyHost.checked ? [] : lines(hostsInput.value), anyHost: anyHost.checked };
    try {
      const saved = await api.serverConfine(server, confinement);
      onSaved(saved);
    } catch (failed) {
      // As text: the host's message names the value and what to write instead.
      error.replaceChildren(el('code', {}, failed.code ?? 'error'), ' ', failed.message ?? '');
      error.hidden = false;
    } finally {
      save.disabled = false;
    }
  });
  return form;
}
