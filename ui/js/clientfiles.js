// The AI clients' own config files: Connect (their servers imported into Gatehouse, their file
// pointed at `gatehouse serve`) and Restore, one click each, and under a connected client the
// servers it brought with what each is now. A server that can be pinned has a Pin button, which
// shows the plan (package, version, closure, every tool with its definition) for the person to
// confirm; their Pin is the consent. Everything shown is text: tool names, descriptions and
// definitions are the server's, and a decision arrives only as a closed state code.
import * as api from './api.js';
import { el, replace } from './dom.js';
import { notify } from './notice.js';
import { asText, coalesce } from './util.js';

const STATES = Object.freeze({
  admitted: ['admitted', 'good'],
  pinned_by_you: ['pinned by you', 'good'],
  can_be_pinned: ['can be pinned', 'warn'],
  ask_your_admin: ['ask your admin to bind it', 'warn'],
  refused: ['refused', 'bad'],
  unattested: ['running unattested (warn posture)', 'warn'],
  suspended: ['suspended', 'bad'],
  connecting: ['connecting…', 'busy'],
  not_connected: ['not connected yet', 'idle'],
  removed: ['no longer in your servers', 'idle'],
});

let list;
let dialog;
let body;
let error;
let confirmButton;
/** The last refusal of each client's Connect or Restore, shown on its card until the next try. */
const refusals = new Map();
/** The server the pin dialog is about, and which plan request is the latest (older answers are dropped). */
let pinning = null;
let asked = 0;

export function init() {
  list = document.getElementById('client-files');
  dialog = document.getElementById('pin-dialog');
  body = document.getElementById('pin-dialog-body');
  error = dialog.querySelector('.dialog-error');
  confirmButton = dialog.querySelector('[data-action=pin-confirm]');
  dialog.querySelector('[data-action=pin-cancel]').addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => {
    pinning = null;
    asked += 1;
  });
  confirmButton.addEventListener('click', () => pinConfirmed());
  listen();
}

function stateBadge(state) {
  const [text, tone] = STATES[state] ?? [String(state), 'idle'];
  return el('span', { class: `badge tone-${tone}`, 'data-testid': 'brought-state' }, text);
}

function broughtRow(server) {
  const reason = server.row?.reason;
  const showReason = reason && (server.state === 'refused' || server.state === 'can_be_pinned' || server.state === 'ask_your_admin');
  return el('li', { class: 'brought', 'data-testid': 'brought', 'data-server': server.name, 'data-state': server.state },
    el('strong', {}, server.name), ' ', stateBadge(server.state),
    server.state === 'can_be_pinned'
      ? [' ', el('button', { type: 'button', class: 'secondary small', 'data-action': 'pin', 'data-server': server.name }, 'Pin…')]
      : null,
    showReason
      ? el('p', { class: 'muted', 'data-testid': 'reason', 'data-code': reason.code }, el('code', {}, reason.code), ' ', reason.detail)
      : null);
}

function refusalLine(row) {
  const refusal = refusals.get(row.client);
  if (!refusal) return null;
  return el('p', { class: 'action-error', 'data-testid': 'client-error', 'data-code': refusal.code },
    el('code', {}, refusal.code), ' ', refusal.message,
    refusal.code === 'client_changed_since_connect'
      ? [' ', el('button', { type: 'button', class: 'secondary small', 'data-action': 'client-restore-force', 'data-client': row.client }, 'Restore anyway')]
      : null);
}

function describe(row) {
  if (!row.exists) return 'Not installed (no config file).';
  if (row.problem) return `Cannot be read: ${row.problem}`;
  if (row.connected) return 'Connected: it launches Gatehouse as its only MCP server.';
  if (row.scope === 'settings') return `Listed only: ${row.servers ?? 0} server(s) here, which Connect does not rewrite.`;
  return `${row.servers ?? 0} MCP server(s) of its own.`;
}

function fileCard(row) {
  return el('article', { class: 'client-card', 'data-testid': 'client-file', 'data-client': row.client, 'data-scope': row.scope, 'data-connected': String(row.connected) },
    el('header', { class: 'card-head' },
      el('h3', { class: 'card-title' }, el('strong', {}, row.displayName),
        row.scope === 'settings' ? el('span', { class: 'muted' }, ' (settings.json)') : null),
      el('span', { class: `badge tone-${row.connected ? 'good' : 'idle'}`, 'data-testid': 'client-file-state' },
        row.connected ? 'connected through Gatehouse' : (row.exists ? 'not connected' : 'not installed'))),
    el('p', { class: 'muted mono', 'data-testid': 'client-path' }, row.path),
    el('p', {}, describe(row)),
    row.backup ? el('p', { class: 'muted' }, 'A backup of its own file is kept: Restore puts it back byte for byte.') : null,
    el('div', { class: 'actions' },
      row.canConnect ? el('button', { type: 'button', class: 'primary', 'data-action': 'client-connect', 'data-client': row.client }, 'Connect') : null,
      row.canRestore ? el('button', { type: 'button', class: 'secondary', 'data-action': 'client-restore', 'data-client': row.client }, 'Restore') : null),
    refusalLine(row),
    row.brought.length === 0
      ? null
      : el('section', { class: 'brought-list' },
        el('h4', {}, 'Servers it brought'),
        el('ul', {}, row.brought.map(broughtRow))));
}

export const refresh = coalesce(async () => {
  if (!list) return;
  let rows;
  try {
    rows = await api.clientConfigs();
  } catch (failure) {
    replace(list, el('p', { class: 'action-error', 'data-testid': 'client-files-error', 'data-code': failure.code },
      el('code', {}, failure.code), ' ', failure.message));
    return;
  }
  replace(list, rows.map(fileCard));
});

async function clientAction(button, run) {
  const client = button.dataset.client;
  button.disabled = true;
  try {
    await run(client);
    refusals.delete(client);
  } catch (failure) {
    refusals.set(client, { code: failure.code, message: failure.message });
  } finally {
    button.disabled = false;
  }
  refresh();
}

function listen() {
  list.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-action]');
    if (!button || !list.contains(button)) return;
    switch (button.dataset.action) {
      case 'client-connect':
        clientAction(button, async (client) => {
          const done = await api.clientConnect(client);
          notify(`${done.row.displayName} now reaches its servers through Gatehouse.`, { tone: 'good' });
        });
        break;
      case 'client-restore':
      case 'client-restore-force':
        clientAction(button, async (client) => {
          const done = await api.clientRestore(client, button.dataset.action === 'client-restore-force');
          notify(`${done.row.displayName}'s own file is back.`, { tone: 'good' });
        });
        break;
      case 'pin':
        openPin(button.dataset.server);
        break;
      default:
    }
  });
}

function toolItem(tool) {
  return el('li', { class: 'pin-tool', 'data-testid': 'pin-tool', 'data-tool': tool.name },
    el('code', { 'data-testid': 'pin-tool-name' }, tool.name),
    el('p', { class: 'tool-desc', 'data-testid': 'pin-tool-description' }, tool.description ?? ''),
    el('details', {},
      el('summary', {}, 'Definition (what the pin holds it to)'),
      el('pre', { 'data-testid': 'pin-tool-definition' }, asText(tool.definition))));
}

function planView(plan) {
  return [
    el('dl', { class: 'pin-facts' },
      el('dt', {}, 'Package'), el('dd', { class: 'mono', 'data-testid': 'pin-package' }, `${plan.ecosystem} ${plan.package}`),
      el('dt', {}, 'Version'), el('dd', { class: 'mono', 'data-testid': 'pin-version' }, plan.version),
      el('dt', {}, 'Closure'), el('dd', { 'data-testid': 'pin-closure', 'data-closure': plan.closure }, `${Number(plan.closure) || 0} packages, the bound one included`),
      el('dt', {}, 'Files'), el('dd', { 'data-testid': 'pin-files' }, `${Number(plan.files) || 0} files, each checked against the store`),
      plan.args.length > 0 ? [el('dt', {}, 'Fixed arguments'), el('dd', { class: 'mono' }, plan.args.join(' '))] : null,
      plan.userArgs ? [el('dt', {}, 'Your arguments'), el('dd', {}, 'existing directories under your home')] : null),
    el('p', {}, `${plan.tools.length} tool(s), each allowed and pinned to this definition; a later version or a changed file is refused until you pin again:`),
    el('ul', { class: 'pin-tools' }, plan.tools.map(toolItem)),
  ];
}

async function openPin(server) {
  pinning = server;
  const mine = ++asked;
  dialog.dataset.server = server;
  dialog.dataset.state = 'loading';
  replace(body, el('p', { class: 'form-pending' }, `Resolving ${server}, installing it into a scratch store and listing its tools…`));
  replace(error);
  confirmButton.disabled = true;
  if (!dialog.open) dialog.showModal();
  try {
    const plan = await api.pinPlan(server);
    if (mine !== asked) return;
    dialog.dataset.state = 'ready';
    replace(body, planView(plan));
    confirmButton.disabled = false;
    confirmButton.focus();
  } catch (failure) {
    if (mine !== asked) return;
    dialog.dataset.state = 'error';
    replace(error, el('span', { 'data-testid': 'pin-error', 'data-code': failure.code }, el('code', {}, failure.code), ' ', failure.message));
  }
}

async function pinConfirmed() {
  const server = pinning;
  if (!server || dialog.dataset.state !== 'ready') return;
  const mine = asked;
  dialog.dataset.state = 'pinning';
  confirmButton.disabled = true;
  try {
    const done = await api.pin(server);
    if (mine === asked) dialog.close();
    notify(`Pinned by you: ${done.server} (${done.tools.length} tool(s) allowed).`, { tone: 'good' });
  } catch (failure) {
    if (mine !== asked) return;
    dialog.dataset.state = 'error';
    replace(error, el('span', { 'data-testid': 'pin-error', 'data-code': failure.code }, el('code', {}, failure.code), ' ', failure.message));
  }
  refresh();
}
