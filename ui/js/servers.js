// Servers: the configured list with admission status, adding and importing servers, and one
// server's detail (identity, confinement (confinement.js), then tabs: Tools with a form to call an allowed tool, Resources
// (resources.js) and Prompts (serverprompts.js)).
import * as api from './api.js';
import { el, replace, flag } from './dom.js';
import { renderBanner, statusBadge, demoTag } from './identity.js';
import { confinementSection } from './confinement.js';
import { buildToolForm } from './toolform.js';
import { resourcesPanel, resourcesShown, forgetResources } from './resources.js';
import { promptsPanel, promptsShown, forgetPrompts } from './serverprompts.js';
import { notify } from './notice.js';
import { coalesce, asText, splitArgs } from './util.js';

let rows = [];
let selected = null;
let detail = null;
let detailRound = 0;
let openTool = null; // {name, schema, form}
// The detail's tab: tools | resources | prompts (kept while servers change).
let detailTab = 'tools';
const TABS = [['tools', 'Tools'], ['resources', 'Resources'], ['prompts', 'Prompts']];
// Servers that sign in (HTTP without a static credential), by name: {server, signIn}.
let signInServers = new Map();
let listRoot;
let detailSlot;
let reportSlot;

export function init() {
  listRoot = document.getElementById('server-list');
  detailSlot = document.getElementById('server-detail-slot');
  reportSlot = document.getElementById('import-report');
  setUpAddDialog();
  setUpImport();
  listRoot.addEventListener('click', (event) => {
    const row = event.target.closest('[data-server]');
    if (!row) return;
    const action = event.target.closest('button[data-action]')?.dataset.action;
    const name = row.dataset.server;
    if (action === 'resume') resume(name);
    else if (action === 'connect') connect(name);
    else openDetail(name);
  });
  refreshSignIns();
}

/** Refetches which servers sign in and their stored sign-ins; redraws the detail if its changed. */
export const refreshSignIns = coalesce(async () => {
  let list;
  try {
    list = await api.serverSignIns();
  } catch {
    // A config that cannot be read is reported by the server list itself.
    return;
  }
  const before = detail ? JSON.stringify(signInServers.get(detail.row.name) ?? null) : null;
  signInServers = new Map((list ?? []).map((entry) => [entry.server, entry]));
  if (detail && selected === detail.row.name
    && JSON.stringify(signInServers.get(detail.row.name) ?? null) !== before) {
    renderDetail(detail);
  }
});

/** The configured server names, as last fetched. */
export const names = () => rows.map((r) => r.name);

export const refresh = coalesce(async () => {
  try {
    rows = await api.serversList();
  } catch (error) {
    notify(error);
    return;
  }
  renderList();
  if (!selected) return;
  const row = rows.find((r) => r.name === selected);
  if (!row) {
    selected = null;
    detail = null;
    openTool = null;
    detailSlot.replaceChildren();
  } else if (row.connected) {
    await loadDetail(selected, { quiet: true });
  } else if (detail && detail.row.name === row.name) {
    renderDetail({ ...detail, row });
  }
});

function reasonText(reason) {
  if (!reason) return '';
  if (typeof reason === 'string') return reason;
  return [reason.code, reason.detail ?? reason.message].filter(Boolean).join(': ');
}

function renderList() {
  if (rows.length === 0) {
    replace(listRoot, el('li', { class: 'empty' }, 'No servers yet. Add one, or import an mcpServers file from another MCP client.'));
    return;
  }
  replace(listRoot, rows.map((row) =>
    el('li', { class: 'server-row', 'data-server': row.name, 'aria-current': row.name === selected ? 'true' : null },
      el('div', { class: 'row-main' },
        el('button', { type: 'button', class: 'row-open', 'data-action': 'open-server', 'aria-label': `Show ${row.name}` },
          el('span', { class: 'server-name' }, row.name), row.demo ? demoTag() : null),
        statusBadge(row.status, { 'data-testid': 'status', 'data-status': row.status })),
      el('p', { class: 'row-target mono' }, `${row.transport} · ${row.target ?? ''}`),
      row.headline ? el('p', { class: 'row-headline' }, row.headline) : null,
      el('p', { class: 'reason', 'data-testid': 'reason', 'data-code': row.reason?.code },
        row.reason ? [el('code', {}, row.reason.code), ' ', row.reason.detail ?? ''] : null),
      row.status === 'suspended' || row.status === 'not_connected' || row.status === 'error'
        ? el('div', { class: 'row-actions' },
          row.status === 'suspended'
            ? el('button', { type: 'button', class: 'secondary small', 'data-action': 'resume' }, 'Resume')
            : el('button', { type: 'button', class: 'secondary small', 'data-action': 'connect' }, 'Connect'))
        : null)));
}

function markSelected() {
  for (const node of listRoot.querySelectorAll('[data-server]')) {
    if (node.dataset.server === selected) node.setAttribute('aria-current', 'true');
    else node.removeAttribute('aria-current');
  }
}

async function openDetail(name) {
  if (selected !== name) openTool = null;
  selected = name;
  markSelected();
  refreshSignIns();
  await loadDetail(name, { quiet: false });
}

async function loadDetail(name, { quiet, connectNow = false }) {
  const round = ++detailRound;
  if (!quiet) {
    replace(detailSlot, el('div', { class: 'detail-loading', role: 'status' },
      el('span', { class: 'spinner', 'aria-hidden': 'true' }), `Connecting to ${name}…`));
  }
  try {
    const next = connectNow ? await api.serverConnect(name) : await api.serverDetail(name);
    if (round !== detailRound || selected !== name) return;
    if (quiet && detail && JSON.stringify(next) === JSON.stringify(detail)) return;
    renderDetail(next);
  } catch (error) {
    if (round !== detailRound || selected !== name) return;
    if (quiet) return;
    detail = null;
    replace(detailSlot, el('div', { class: 'detail-error', 'data-testid': 'detail-error', 'data-code': error.code },
      el('p', {}, 'Gatehouse could not show ', el('strong', {}, name), ':'),
      el('p', {}, el('code', {}, error.code), ' ', error.message)));
  }
}

async function connect(name) {
  if (selected !== name) openTool = null;
  // A new connection: its listings and subscriptions start afresh.
  forgetResources(name);
  forgetPrompts(name);
  selected = name;
  markSelected();
  refreshSignIns();
  await loadDetail(name, { quiet: false, connectNow: true });
}

// The person's confinement settings are saved and the server was closed: show it again,
// started under them.
function confined(name, saved) {
  const words = { confined: 'confined', unconfined: 'unconfined', not_applicable: 'not confined' };
  notify(`Saved: ${name} is now ${words[saved?.state] ?? 'changed'}.`, { tone: 'good' });
  if (selected === name) loadDetail(name, { quiet: false });
  refresh();
}

async function resume(name) {
  try {
    await api.serverResume(name);
  } catch (error) {
    notify(error);
  }
  refresh();
}

// Labels of the review's finding kinds (gatehouse_review::FindingKind codes).
const FINDING_KINDS = {
  invisible_characters: 'Invisible or direction-changing characters',
  model_instruction: 'Instructions aimed at the model',
  other_server_tool: "Names another server's tool",
  other_tool_instruction: 'Says how another tool must be used',
  secret_request: 'Asks for a secret',
};

/**
 * What a tool card shows of a definition: its review (`DetailView.reviews`), whose text the
 * host escaped (invisible characters as \u{XXXX}). Never the raw definition's text: without a
 * review a card shows the name only, escaped here the same way as a last resort.
 */
function shownOf(tool, reviews) {
  const review = reviews?.[tool.name];
  if (review && typeof review === 'object') return review;
  return { name: escapeInvisible(String(tool.name ?? '?')), title: null, description: null, findings: [], needsAcknowledgement: false };
}

// The same characters as gatehouse_review::is_invisible, for the fallback above only.
const INVISIBLE = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF0-\uFFF8]|[\u{1BCA0}-\u{1BCA3}]|[\u{1D173}-\u{1D17A}]|[\u{E0000}-\u{E0FFF}]/gu;
function escapeInvisible(text) {
  return text.replace(INVISIBLE, (c) => `\\u{${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}}`);
}

/** The review's findings as a list, every value set as text. */
function findingsList(findings) {
  if (!Array.isArray(findings) || findings.length === 0) return null;
  return el('ul', { class: 'findings', 'data-testid': 'findings', 'aria-label': 'Review findings' },
    findings.map((f) => el('li', { class: `finding finding-${f.severity === 'high' ? 'high' : 'medium'}`, 'data-kind': String(f.kind), 'data-severity': String(f.severity) },
      el('span', { class: 'finding-kind' }, FINDING_KINDS[f.kind] ?? String(f.kind)),
      ' ', el('span', { class: 'finding-severity' }, f.severity === 'high' ? 'high' : 'medium'),
      ' in ', el('code', {}, String(f.field ?? '')),
      el('p', { class: 'finding-excerpt mono' }, String(f.excerpt ?? '')),
      el('p', { class: 'finding-detail muted' }, String(f.detail ?? '')))));
}

function toolItem(tool, status, extra = [], { reviews = {}, server = null, canApprove = false } = {}) {
  const shown = shownOf(tool, reviews);
  // Hidden tools may be approved by the user in the warn posture; one with a high finding
  // only through the explicit "Approve despite findings".
  const approve = status === 'hidden' && canApprove && server
    ? el('button', {
      type: 'button',
      class: shown.needsAcknowledgement ? 'danger small' : 'secondary small',
      'data-action': shown.needsAcknowledgement ? 'approve-tool-despite-findings' : 'approve-tool',
    }, shown.needsAcknowledgement ? 'Approve despite findings' : 'Approve')
    : null;
  approve?.addEventListener('click', () => approveTool(server, tool.name, shown, approve));
  return el('li', { class: `tool tool-${status}`, 'data-tool': tool.name, 'data-tool-status': status, 'data-findings': String(shown.findings?.length ?? 0) },
    el('div', { class: 'tool-head' },
      el('code', { class: 'tool-name' }, shown.name),
      shown.title && shown.title !== shown.name ? el('span', { class: 'muted' }, shown.title) : null,
      status === 'allowed'
        ? el('button', { type: 'button', class: 'secondary small', 'data-action': 'open-tool', 'aria-expanded': 'false' }, 'Open')
        : approve),
    typeof shown.description === 'string' && shown.description !== ''
      ? el('p', { class: 'tool-desc' }, shown.description)
      : null,
    findingsList(shown.findings),
    extra);
}

async function approveTool(server, name, shown, button) {
  button.disabled = true;
  const acknowledgement = shown.needsAcknowledgement ? 'high_findings' : 'not_given';
  try {
    await api.toolsApprove(server, [name], acknowledgement);
    notify(`Approved the tool ${shown.name} for ${server}.`, { tone: 'good' });
  } catch (error) {
    notify(error);
    button.disabled = false;
    return;
  }
  await loadDetail(server, { quiet: true });
}

function blockedItem({ tool, reason, expected, actual }, context) {
  return toolItem(tool ?? { name: '?' }, 'blocked', [
    el('p', { class: 'reason', 'data-testid': 'reason', 'data-code': typeof reason === 'string' ? reason : reason?.code }, reasonText(reason)),
    el('details', { class: 'raw' }, el('summary', {}, 'Pinned definition and what the server sends now'),
      el('div', { class: 'compare' },
        el('div', {}, el('p', { class: 'muted' }, 'Pinned'), el('pre', { class: 'mono', 'data-testid': 'pin-expected' }, asText(expected))),
        el('div', {}, el('p', { class: 'muted' }, 'Now'), el('pre', { class: 'mono', 'data-testid': 'pin-actual' }, asText(actual))))),
  ], context);
}

function toolGroup(title, note, items, empty) {
  if (items.length === 0 && !empty) return null;
  return el('div', { class: 'tool-group' },
    el('h4', {}, title, ' ', el('span', { class: 'count-inline' }, String(items.length))),
    note ? el('p', { class: 'muted' }, note) : null,
    items.length > 0 ? el('ul', { class: 'tools' }, items) : el('p', { class: 'empty' }, empty));
}

/**
 * A package server's binding (`ServerRow.package`), read-only and as text: what is bound, how
 * many packages its tree holds, how many files admission checked, and the user's own arguments.
 */
function packageLine(pkg) {
  if (!pkg || typeof pkg !== 'object') return null;
  const args = Array.isArray(pkg.user_args) ? pkg.user_args.map(String) : [];
  return el('p', { class: 'muted mono', 'data-testid': 'package-binding' },
    `${pkg.ecosystem ?? ''} ${pkg.package ?? ''} ${pkg.version ?? ''}`,
    ` · ${Number(pkg.closure) || 0} packages`,
    ` · tree verified (${Number(pkg.files_verified) || 0} files)`,
    args.length > 0 ? ` · your args: ${args.join(' ')}` : '');
}

function renderDetail(next) {
  detail = next;
  const { row } = next;
  const tools = next.tools ?? { allowed: [], hidden: [], blocked: [] };
  const allowed = tools.allowed ?? [];
  const cards = { reviews: next.reviews ?? {}, server: row.name, canApprove: next.canApprove === true };
  if (openTool) {
    const still = allowed.find((t) => t.name === openTool.name);
    if (!still || JSON.stringify(still.inputSchema ?? null) !== openTool.schema) openTool = null;
  }
  const reconnect = el('button', { type: 'button', class: 'secondary small', 'data-action': 'connect' },
    row.connected ? 'Reconnect' : 'Connect');
  reconnect.addEventListener('click', () => connect(row.name));
  const resumeButton = row.status === 'suspended'
    ? el('button', { type: 'button', class: 'secondary small', 'data-action': 'resume' }, 'Resume')
    : null;
  resumeButton?.addEventListener('click', () => resume(row.name));

  const section = el('section', { class: 'server-detail', 'data-testid': 'server-detail', 'data-server': row.name, 'aria-label': `Server ${row.name}` },
    el('header', { class: 'detail-head' },
      el('h2', {}, row.name),
      statusBadge(row.status, { 'data-status': row.status }),
      row.demo ? demoTag() : null,
      el('div', { class: 'spacer' }),
      resumeButton, reconnect),
    el('p', { class: 'muted mono' }, `${row.transport} · ${row.target ?? ''}`, next.era ? ` · protocol ${next.era}` : ''),
    packageLine(row.package),
    row.headline ? el('p', { class: 'headline' }, row.headline) : null,
    row.reason
      ? el('p', { class: 'reason', 'data-testid': 'detail-reason', 'data-code': row.reason.code },
        el('code', {}, row.reason.code), ' ', row.reason.detail ?? '')
      : null,
    signInSection(row.name),
    el('h3', {}, 'Identity'),
    renderBanner(next.banner, 'identity', row.status),
    row.transport === 'stdio' ? [el('h3', {}, 'Confinement'), confinementSection(next.confinement, row.name, (saved) => confined(row.name, saved))] : null,
    detailTabs(row, [
      toolGroup('Allowed', 'Listed for this server by its attestation; you can call them.',
        allowed.map((t) => toolItem(t, 'allowed', [], cards)), 'No tools to call.'),
      toolGroup('Hidden by the allow-list', 'The server offers these, but its attestation does not list them: Gatehouse hides them and refuses calls.',
        (tools.hidden ?? []).map((t) => toolItem(t, 'hidden', [], cards)), null),
      toolGroup('Blocked by a pin change', 'Their definitions changed since they were pinned, so they are blocked until the server is attested again.',
        (tools.blocked ?? []).map((b) => blockedItem(b, cards)), null),
    ]));

  section.addEventListener('click', (event) => {
    const account = event.target.closest('button[data-action=sign-in], button[data-action=sign-out]');
    if (account && !account.disabled) {
      if (account.dataset.action === 'sign-in') signIn(row.name, account);
      else signOut(row.name, account);
      return;
    }
    const button = event.target.closest('button[data-action=open-tool]');
    if (!button) return;
    const name = button.closest('[data-tool]').dataset.tool;
    toggleTool(section, allowed.find((t) => t.name === name));
  });
  if (openTool) placeToolForm(section);
  replace(detailSlot, section);
  tabShown(row.name);
}

/** Tools | Resources | Prompts: a tab list and its panels (resources and prompts kept across redraws). */
function detailTabs(row, toolContent) {
  const panels = {
    tools: toolContent,
    resources: resourcesPanel(row.name, row.connected),
    prompts: promptsPanel(row.name, row.connected),
  };
  const buttons = TABS.map(([key, label]) => el('button', {
    type: 'button', role: 'tab', id: `detail-tab-${key}`, class: 'tab', 'data-tab': key,
    'aria-controls': `detail-tab-panel-${key}`, 'aria-selected': String(key === detailTab), tabindex: key === detailTab ? '0' : '-1',
  }, label));
  const list = el('div', { class: 'tabs', role: 'tablist', 'aria-label': 'What the server offers', 'data-testid': 'detail-tabs' }, buttons);
  const bodies = TABS.map(([key]) => el('div', {
    role: 'tabpanel', id: `detail-tab-panel-${key}`, class: 'tab-panel', 'data-tab-panel': key,
    'aria-labelledby': `detail-tab-${key}`, hidden: key !== detailTab,
  }, panels[key]));
  const choose = (key, focus) => {
    detailTab = key;
    for (const button of buttons) {
      const on = button.dataset.tab === key;
      button.setAttribute('aria-selected', String(on));
      button.setAttribute('tabindex', on ? '0' : '-1');
      if (on && focus) button.focus();
    }
    for (const body of bodies) flag(body, 'hidden', body.dataset.tabPanel !== key);
    tabShown(row.name);
  };
  list.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-tab]');
    if (button) choose(button.dataset.tab, false);
  });
  list.addEventListener('keydown', (event) => {
    const at = TABS.findIndex(([key]) => key === detailTab);
    let next = null;
    if (event.key === 'ArrowRight') next = (at + 1) % TABS.length;
    else if (event.key === 'ArrowLeft') next = (at + TABS.length - 1) % TABS.length;
    else if (event.key === 'Home') next = 0;
    else if (event.key === 'End') next = TABS.length - 1;
    if (next === null) return;
    event.preventDefault();
    choose(TABS[next][0], true);
  });
  return [list, bodies];
}

/** Lists the shown tab's resources or prompts the first time it is shown. */
function tabShown(name) {
  if (detailTab === 'resources') resourcesShown(name);
  else if (detailTab === 'prompts') promptsShown(name);
}

// For a server that signs in: whether a sign-in is stored (issuer, subject, scopes as text)
// and Sign in / Sign out. Absent for every other server.
function signInSection(name) {
  const entry = signInServers.get(name);
  if (!entry) return null;
  const stored = entry.signIn;
  const scopes = stored?.scopes ?? [];
  return el('div', { class: 'sign-in-section', 'data-testid': 'sign-in-section', 'data-signed-in': String(Boolean(stored)) },
    stored
      ? el('p', {},
        'Signed in', stored.subject ? [' as ', el('strong', { 'data-testid': 'sign-in-subject' }, stored.subject)] : null,
        ' at ', el('code', { 'data-testid': 'sign-in-issuer' }, stored.issuer ?? '(no issuer published)'),
        scopes.length > 0 ? [' for ', el('code', {}, scopes.join(' '))] : null, '.')
      : el('p', {}, 'Not signed in. This server has no static credential: Gatehouse signs in with MCP authorization when it asks, after you agree on the sign-in card.'),
    el('div', { class: 'actions' },
      stored
        ? el('button', { type: 'button', class: 'secondary small', 'data-action': 'sign-out' }, 'Sign out')
        : el('button', { type: 'button', class: 'secondary small', 'data-action': 'sign-in' }, 'Sign in')));
}

// The sign-in card asks first; once signed in, the server is connected afresh with it.
async function signIn(name, button) {
  button.disabled = true;
  try {
    await api.serverSignIn(name);
    await refreshSignIns();
    await connect(name);
  } catch (error) {
    notify(error);
    refreshSignIns();
  } finally {
    button.disabled = false;
  }
}

async function signOut(name, button) {
  button.disabled = true;
  try {
    const removed = await api.serverSignOut(name);
    notify(removed ? `Signed out of ${name}.` : `${name} had no stored sign-in.`, { tone: 'good' });
  } catch (error) {
    notify(error);
  } finally {
    button.disabled = false;
  }
  await refreshSignIns();
  refresh();
}

function placeToolForm(section) {
  for (const item of section.querySelectorAll('[data-tool-status=allowed]')) {
    const mine = item.dataset.tool === openTool?.name;
    const button = item.querySelector('[data-action=open-tool]');
    button?.setAttribute('aria-expanded', String(mine));
    if (button) button.textContent = mine ? 'Hide' : 'Open';
    if (mine) item.append(openTool.form);
  }
}

function toggleTool(section, tool) {
  if (!tool) return;
  if (openTool?.name === tool.name) {
    openTool.form.remove();
    openTool = null;
    placeToolForm(section);
    return;
  }
  openTool?.form.remove();
  const server = detail.row.name;
  openTool = {
    name: tool.name,
    schema: JSON.stringify(tool.inputSchema ?? null),
    form: buildToolForm(server, tool, {
      review: detail.reviews?.[tool.name] ?? null,
      onClose: () => {
        openTool?.form.remove();
        openTool = null;
        placeToolForm(section);
      },
    }),
  };
  placeToolForm(section);
  openTool.form.querySelector('input, select, textarea, button')?.focus();
}

function setUpAddDialog() {
  const dialog = document.getElementById('add-server-dialog');
  const form = document.getElementById('add-server-form');
  const kind = form.elements.namedItem('kind');
  const error = dialog.querySelector('.dialog-error');
  const showKind = () => {
    for (const group of form.querySelectorAll('[data-kind]')) flag(group, 'hidden', group.dataset.kind !== kind.value);
  };
  document.querySelector('[data-action=add-server]').addEventListener('click', () => {
    form.reset();
    showKind();
    replace(error);
    dialog.showModal();
    form.elements.namedItem('name').focus();
  });
  kind.addEventListener('change', showKind);
  dialog.querySelector('[data-action=close]').addEventListener('click', () => dialog.close());
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const value = (key) => form.elements.namedItem(key).value.trim();
    const entry = { name: value('name'), kind: kind.value };
    if (entry.kind === 'stdio') {
      entry.command = value('command');
      entry.args = splitArgs(form.elements.namedItem('args').value);
    } else {
      entry.url = value('url');
      if (value('bearerToken') !== '') entry.bearerToken = form.elements.namedItem('bearerToken').value;
    }
    const save = form.querySelector('[data-action=save]');
    save.disabled = true;
    try {
      const row = await api.serverAdd(entry);
      dialog.close();
      notify(`Added ${row?.name ?? entry.name}.`, { tone: 'good' });
      refresh();
    } catch (failure) {
      replace(error, el('span', { 'data-testid': 'add-server-error', 'data-code': failure.code },
        el('code', {}, failure.code), ' ', failure.message));
    } finally {
      save.disabled = false;
    }
  });
}

function setUpImport() {
  const input = document.querySelector('[data-testid=import-file]');
  input.addEventListener('change', () => {
    const file = input.files?.[0];
    if (!file) return;
    const reader = new FileReader();
    reader.addEventListener('load', async () => {
      input.value = '';
      try {
        const text = String(reader.result);
        renderImport(file.name, await api.serversImport(text), text);
      } catch (error) {
        replace(reportSlot, el('div', { class: 'import-report tone-bad', 'data-testid': 'import-report', 'data-ok': 'false', 'data-code': error.code },
          el('p', {}, 'Could not import ', el('strong', {}, file.name), ': ', el('code', {}, error.code), ' ', error.message)));
      }
      refresh();
    });
    reader.addEventListener('error', () => {
      input.value = '';
      notify({ code: 'file_unreadable', message: `Could not read ${file.name}.` });
    });
    reader.readAsText(file);
  });
}

// An entry that sets what a server runs is held back; the user imports it only after seeing
// its exact settings, by pressing the button on that entry (a typed call naming it).
function heldEntry(fileName, text, held) {
  const confirm = el('button', { type: 'button', class: 'small danger', 'data-confirm-import': held.name },
    'Import ', held.name, ' with these settings');
  confirm.addEventListener('click', async () => {
    try {
      renderImport(fileName, await api.serversImport(text, [held.name]), text);
    } catch (error) {
      notify(error);
    }
    refresh();
  });
  return el('li', { 'data-quarantined': held.name },
    el('strong', {}, held.name),
    ' sets what the server runs:',
    el('ul', {}, (held.settings ?? []).map((setting) => el('li', {}, el('code', {},
      setting.kind === 'cwd' ? `cwd ${setting.path}` : `env ${setting.name}=${setting.value}`)))),
    confirm);
}

function renderImport(fileName, report, text) {
  const imported = report?.imported ?? [];
  const skipped = report?.skipped ?? [];
  const moved = report?.secrets_moved ?? [];
  const warnings = report?.warnings ?? [];
  const quarantined = report?.quarantined ?? [];
  const refused = report?.refused ?? [];
  const close = el('button', { type: 'button', class: 'ghost small', 'aria-label': 'Close the import report' }, '×');
  close.addEventListener('click', () => reportSlot.replaceChildren());
  replace(reportSlot, el('div', { class: 'import-report', 'data-testid': 'import-report', 'data-ok': 'true' },
    el('div', { class: 'report-head' },
      el('p', {}, 'Imported ', String(imported.length), ' of ', String(imported.length + skipped.length), ' from ', el('strong', {}, fileName), '.'),
      close),
    imported.length > 0
      ? el('ul', { class: 'imported' }, imported.map((name) => el('li', { 'data-imported': name }, name)))
      : null,
    skipped.length > 0
      ? [el('p', { class: 'muted' }, 'Skipped:'),
        // The desk reports a skipped entry by its name; {name, reason} is shown with the reason.
        el('ul', { class: 'skipped' }, skipped.map((s) => (typeof s === 'string'
          ? el('li', { 'data-skipped': s }, s)
          : el('li', { 'data-skipped': s.name }, el('strong', {}, s.name), ': ', reasonText(s.reason)))))]
      : null,
    moved.length > 0
      ? [el('p', { class: 'muted' }, 'Moved to the system keychain:'), el('ul', {}, moved.map((m) => el('li', {}, m)))]
      : null,
    warnings.length > 0
      ? [el('p', { class: 'muted' }, 'Warnings:'), el('ul', { class: 'warnings' }, warnings.map((w) => el('li', {}, w)))]
      : null,
    quarantined.length > 0
      ? [el('p', { class: 'muted' }, 'Not imported until you confirm (they change what the server runs):'),
        el('ul', { class: 'quarantined' }, quarantined.map((held) => heldEntry(fileName, text, held)))]
      : null,
    refused.length > 0
      ? [el('p', { class: 'muted' }, 'Refused:'),
        el('ul', { class: 'refused' }, refused.map((r) => el('li', { 'data-refused': r.name },
          el('strong', {}, r.name), ': ', el('code', {}, r.code), ' ', r.detail)))]
      : null));
}
