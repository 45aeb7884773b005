// A server's resources in its detail (the Resources tab): the listing as the gate sees it
// (allowed, hidden with the reason), reading a resource or a template (one field per variable,
// with completion), subscribing to updates, and the result with who sent it. The panel is kept
// across redraws of the detail, so a result or a half-filled template survives a refresh.
import * as api from './api.js';
import { el, replace } from './dom.js';
import { notify } from './notice.js';
import {
  renderSender, renderDisplay, renderError, completionField, shownKind, listGroup, contextOf, setPanelStatus, attachPanel,
} from './content.js';

/** The panel of the server shown: {server, root, listSlot, resultSlot, …}, or null. */
let panel = null;

function newPanel(server) {
  const refresh = el('button', { type: 'button', class: 'secondary small', 'data-action': 'refresh-resources' }, 'Refresh');
  const listSlot = el('div', { class: 'context-list' });
  const resultSlot = el('div', { class: 'context-result', 'aria-live': 'polite' });
  const root = el('div', { class: 'context-panel', 'data-testid': 'resources-panel', 'data-server': server, 'data-state': 'idle' },
    el('div', { class: 'panel-head' },
      el('p', { class: 'muted' }, 'Resources are documents and data the server offers. Gatehouse reads only those its gate allows and shows text as text.'),
      refresh),
    listSlot,
    resultSlot);
  const state = {
    server, root, listSlot, resultSlot,
    connected: false,
    status: 'idle', // idle | loading | loaded | error | offline
    groups: null,
    canApprove: false,
    subscribed: new Set(),
    // uri -> updates seen since it was last read
    updates: new Map(),
    // uri -> the badge slot in its list item
    badges: new Map(),
    readRound: 0,
    loadRound: 0,
    shownUri: null,
  };
  refresh.addEventListener('click', () => load(state));
  return state;
}

/**
 * The Resources panel of `server` (kept while the same server is shown). `connected` is whether a
 * live connection exists: without one nothing is listed, so looking never re-admits a server.
 */
export function resourcesPanel(server, connected) {
  panel = attachPanel(panel, server, connected, newPanel, 'resources');
  return panel.root;
}

/** The tab was shown: lists the resources the first time (and after a reconnect). */
export function resourcesShown(server) {
  if (panel && panel.server === server && panel.connected && panel.status === 'idle') load(panel);
}

/** Forgets the panel (the server was reconnected: its subscriptions and listing are new). */
export function forgetResources(server) {
  if (!server || panel?.server === server) panel = null;
}

/** `gatehouse://resources`: a subscribed resource changed on its server. */
export function resourceUpdated({ server, uri } = {}) {
  const p = panel;
  if (!p || p.server !== server || typeof uri !== 'string') return;
  p.updates.set(uri, (p.updates.get(uri) ?? 0) + 1);
  drawBadge(p, uri);
  if (p.shownUri === uri) {
    const note = p.resultSlot.querySelector('[data-testid=result-updated]');
    if (note) note.hidden = false;
  }
}

async function load(p) {
  if (!p.connected) return;
  const round = ++p.loadRound;
  setPanelStatus(p, 'loading');
  if (!p.groups) {
    replace(p.listSlot, el('p', { class: 'muted', role: 'status' }, el('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Listing resources…'));
  }
  let groups;
  try {
    const [listed, settings] = await Promise.all([
      api.serverResources(p.server),
      api.settingsGet().catch(() => null),
    ]);
    groups = listed;
    p.canApprove = settings?.posture === 'warn';
  } catch (error) {
    if (round !== p.loadRound) return;
    setPanelStatus(p, 'error');
    replace(p.listSlot, renderError('resources-error', {}, 'Gatehouse could not list the resources', error));
    return;
  }
  if (round !== p.loadRound) return;
  p.groups = groups ?? {};
  p.subscribed = new Set(p.groups.subscriptions ?? []);
  setPanelStatus(p, 'loaded');
  drawList(p);
}

function describe(item) {
  return [
    typeof item.description === 'string' && item.description !== ''
      ? el('p', { class: 'tool-desc' }, item.description)
      : null,
  ];
}

function resourceItem(p, resource, status, reason = null) {
  const uri = typeof resource.uri === 'string' ? resource.uri : '';
  const subscribed = p.subscribed.has(uri);
  const badge = el('span', { class: 'update-slot' });
  if (status === 'allowed') p.badges.set(uri, badge);
  const read = status === 'allowed'
    ? el('button', { type: 'button', class: 'secondary small', 'data-action': 'read-resource' }, 'Read')
    : null;
  const toggle = status === 'allowed'
    ? el('button', { type: 'button', class: 'secondary small', 'data-action': subscribed ? 'unsubscribe' : 'subscribe', 'aria-pressed': String(subscribed) },
      subscribed ? 'Unsubscribe' : 'Subscribe')
    : null;
  const approve = status === 'hidden' && p.canApprove
    ? el('button', { type: 'button', class: 'secondary small', 'data-action': 'approve-resource' }, 'Approve')
    : null;
  read?.addEventListener('click', () => readUri(p, uri));
  toggle?.addEventListener('click', () => toggleSubscription(p, uri, toggle));
  approve?.addEventListener('click', () => approveUri(p, uri, approve));
  const li = el('li', { class: `tool tool-${status} resource`, 'data-resource': uri, 'data-resource-status': status, 'data-subscribed': status === 'allowed' ? String(subscribed) : null },
    el('div', { class: 'tool-head' },
      el('span', { class: 'tool-name' }, titleOf(resource) || uri),
      typeof resource.mimeType === 'string' ? el('span', { class: 'tag tag-mime' }, resource.mimeType) : null,
      badge),
    el('p', { class: 'item-uri' }, el('code', { 'data-testid': 'resource-uri' }, uri)),
    describe(resource),
    reason ? el('p', { class: 'reason', 'data-testid': 'reason', 'data-code': reason }, el('code', {}, reason), ' ', hiddenWhy(reason, p.canApprove)) : null,
    read || toggle || approve ? el('div', { class: 'item-actions' }, read, toggle, approve) : null);
  if (status === 'allowed') drawBadge(p, uri);
  return li;
}

function hiddenWhy(reason, canApprove) {
  if (reason === 'resource_not_admitted') {
    return canApprove
      ? 'Not on this server\'s resource allow-list. The posture is warn: you may approve this exact URI.'
      : 'Not on this server\'s resource allow-list: Gatehouse refuses to read it.';
  }
  if (reason === 'resource_uri_refused') return 'Under an allowed prefix, but the rest of the URI could leave it: refused.';
  return 'Gatehouse refuses to read it.';
}

function templateItem(p, row, status, reason = null) {
  const template = row?.template ?? {};
  const uriTemplate = typeof template.uriTemplate === 'string' ? template.uriTemplate : '';
  const variables = Array.isArray(row?.variables) ? row.variables.filter((v) => typeof v === 'string') : [];
  let form = null;
  if (status === 'allowed') {
    const fields = variables.map((variable) => completionField({
      name: variable,
      label: variable,
      required: true,
      complete: (value) => api.argumentComplete(p.server, { template: uriTemplate }, variable, value, contextOf(fields, variable)),
    }));
    const readButton = el('button', { type: 'submit', class: 'primary small', 'data-action': 'read-template' }, 'Read');
    form = el('form', { class: 'template-form', novalidate: true, 'data-template-form': uriTemplate, 'aria-label': `Read ${uriTemplate}` },
      fields.map((f) => f.row),
      el('div', { class: 'actions' }, readButton));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const values = Object.create(null);
      for (const [i, variable] of variables.entries()) values[variable] = fields[i].input.value;
      readTemplate(p, uriTemplate, values);
    });
  }
  return el('li', { class: `tool tool-${status} template`, 'data-template': uriTemplate, 'data-template-status': status },
    el('div', { class: 'tool-head' },
      el('span', { class: 'tool-name' }, titleOf(template) || uriTemplate),
      typeof template.mimeType === 'string' ? el('span', { class: 'tag tag-mime' }, template.mimeType) : null),
    el('p', { class: 'item-uri' }, el('code', { 'data-testid': 'template-uri' }, uriTemplate)),
    describe(template),
    reason ? el('p', { class: 'reason', 'data-testid': 'reason', 'data-code': reason }, el('code', {}, reason), ' ', 'Its URIs are not under an allowed resource prefix: Gatehouse refuses to read them.') : null,
    form);
}

/** "Title (name)", "Title" or "name": the server's words for an item, as text. */
function titleOf(item) {
  const title = typeof item.title === 'string' ? item.title.trim() : '';
  const name = typeof item.name === 'string' ? item.name.trim() : '';
  if (title && name && title.toLowerCase() !== name.toLowerCase()) return `${title} (${name})`;
  return title || name;
}

/** The other fields' values, for a completion that depends on them. */
function drawList(p) {
  const g = p.groups ?? {};
  p.badges = new Map();
  const allowed = (g.allowed ?? []).map((r) => resourceItem(p, r, 'allowed'));
  const templates = (g.templates ?? []).map((t) => templateItem(p, t, 'allowed'));
  const hidden = (g.hidden ?? []).map((w) => resourceItem(p, w.item ?? {}, 'hidden', w.reason));
  const hiddenTemplates = (g.hidden_templates ?? []).map((w) => templateItem(p, w.item ?? {}, 'hidden', w.reason));
  replace(p.listSlot,
    listGroup('Allowed', 'On this server\'s resource allow-list: you can read them.', allowed, 'No resources to read.'),
    listGroup('Templates', 'Fill in the variables to read one: the URI they make is checked by the gate like any other.', templates, null),
    listGroup('Hidden by the allow-list', 'The server lists these, but Gatehouse will not read them.', hidden, null),
    listGroup('Hidden templates', null, hiddenTemplates, null));
}

function drawBadge(p, uri) {
  const slot = p.badges.get(uri);
  if (!slot) return;
  const count = p.updates.get(uri) ?? 0;
  replace(slot, count > 0
    ? el('span', { class: 'tag tag-updated', 'data-testid': 'resource-updated', 'data-updates': String(count) }, count === 1 ? 'updated' : `updated ×${count}`)
    : null);
}

async function toggleSubscription(p, uri, button) {
  const on = !p.subscribed.has(uri);
  button.disabled = true;
  try {
    if (on) await api.resourceSubscribe(p.server, uri);
    else await api.resourceUnsubscribe(p.server, uri);
    if (on) p.subscribed.add(uri);
    else {
      p.subscribed.delete(uri);
      p.updates.delete(uri);
    }
    notify(on ? `Subscribed to ${uri}: Gatehouse marks it when it changes.` : `Unsubscribed from ${uri}.`, { tone: 'good' });
  } catch (error) {
    notify(error);
  } finally {
    button.disabled = false;
  }
  if (panel === p) drawList(p);
}

async function approveUri(p, uri, button) {
  button.disabled = true;
  try {
    await api.resourcesApprove(p.server, [uri]);
    notify(`Approved ${uri} for ${p.server}.`, { tone: 'good' });
  } catch (error) {
    notify(error);
    button.disabled = false;
    return;
  }
  await load(p);
}

function readUri(p, uri) {
  return read(p, { uri }, () => api.resourceRead(p.server, uri));
}

function readTemplate(p, template, values) {
  return read(p, { template }, () => api.templateRead(p.server, template, values));
}

async function read(p, target, call) {
  const round = ++p.readRound;
  p.shownUri = null;
  replace(p.resultSlot, el('p', { class: 'muted', role: 'status', 'data-testid': 'resource-pending' },
    el('span', { class: 'spinner', 'aria-hidden': 'true' }),
    'Reading ', el('code', {}, target.uri ?? target.template), '… If the server asks you something, Gatehouse will show it.'));
  let view;
  try {
    view = await call();
  } catch (error) {
    if (round !== p.readRound) return;
    replace(p.resultSlot, renderError('resource-result', { 'data-uri': target.uri ?? null, 'data-template': target.template ?? null },
      'The read was refused or failed', error));
    reveal(p.resultSlot);
    return;
  }
  if (round !== p.readRound) return;
  p.shownUri = view.uri;
  p.updates.delete(view.uri);
  drawBadge(p, view.uri);
  replace(p.resultSlot, renderRead(p, view, target));
  reveal(p.resultSlot);
}

/** Brings a new result into view, unless it is not shown (another tab, another view). */
function reveal(node) {
  if (node.isConnected && node.getClientRects().length > 0) node.scrollIntoView({ block: 'nearest' });
}

function renderRead(p, view, target) {
  const again = el('button', { type: 'button', class: 'secondary small', 'data-action': 'read-again' }, 'Read again');
  again.addEventListener('click', () => (target.template
    ? readUri(p, view.uri)
    : readUri(p, target.uri)));
  const contents = Array.isArray(view.contents) ? view.contents : [];
  const count = view.elicitations?.length ?? 0;
  return el('section', { class: 'result read-result', 'data-testid': 'resource-result', 'data-is-error': 'false', 'data-uri': view.uri, 'data-read-id': view.readId, 'data-template': target.template ?? null, 'aria-label': `Read ${view.uri}` },
    el('div', { class: 'result-top' },
      el('p', { class: 'result-head' }, 'Read ', el('code', { 'data-testid': 'read-uri' }, view.uri)),
      el('p', { class: 'tag tag-updated', 'data-testid': 'result-updated', hidden: true }, 'updated since this read'),
      again),
    renderSender(view.sender),
    contents.length === 0 ? el('p', { class: 'muted' }, 'The server sent no content.') : null,
    el('ol', { class: 'content-items' }, contents.map((item, index) =>
      el('li', { class: 'content-item', 'data-testid': 'content-item', 'data-index': String(index), 'data-kind': shownKind(item.display) },
        el('p', { class: 'content-meta muted' },
          el('code', { 'data-testid': 'content-uri' }, typeof item.uri === 'string' ? item.uri : ''),
          typeof item.mime === 'string' ? [' · ', el('span', { 'data-testid': 'content-mime' }, item.mime)] : null),
        renderDisplay(item.display, item.mime, { onSave: () => api.resourceSave(view.readId, index) })))),
    count > 0 ? el('p', { class: 'muted' }, `${count} elicitation${count === 1 ? '' : 's'} during this read (see Prompts).`) : null);
}
