// What this Gatehouse trusts and where it keeps things: trust-root bundles, the posture, the
// elicitation policy file and the paths, and what the audit log had to repair at start-up.
// Read-only: changing trust is an admin's job. The one switch here is the person's own: start
// Gatehouse when they log in (issue 26).
import * as api from './api.js';
import { el, replace } from './dom.js';
import { demoTag } from './identity.js';
import { notify } from './notice.js';
import { coalesce, formatTime } from './util.js';

const POSTURE = {
  'deny-by-default': { label: 'Deny by default', tone: 'good', note: 'Servers that are not admitted are refused.' },
  warn: { label: 'Warn', tone: 'warn', note: 'Servers that are not admitted are shown with a warning, never as admitted.' },
};

let root;
// The start-at-login panel, redrawn on its own when the switch or the first-run choice changes.
let loginPanel = null;

export function init() {
  root = document.getElementById('settings-body');
}

// What each state of start at login means for the person, in words.
function loginNote(view) {
  switch (view.status) {
    case 'on':
      return ['On: Gatehouse starts in the background when you log in, so your AI clients can reach it and their requests reach you. It starts ',
        el('code', { 'data-testid': 'autostart-exec' }, view.exec ?? ''), '.'];
    case 'off':
      return ['Off: Gatehouse runs only after you open it. Until then, AI clients that need your answer are told the app is not running.'];
    case 'foreign':
      return ['Another startup entry is already at ', el('code', { 'data-testid': 'autostart-entry' }, view.entry ?? ''),
        ` and Gatehouse did not write it (${FOREIGN[view.foreign] ?? view.foreign}). Gatehouse leaves it alone: remove it yourself to choose here.`];
    default:
      return ['Not available here: this Gatehouse was not told which program to start at login (start the installed app), or this desktop has no XDG autostart.'];
  }
}

const FOREIGN = {
  not_written_by_gatehouse: 'it has no Gatehouse marker',
  unexpected_exec: 'its command was changed',
  not_a_regular_file: 'it is a link or a folder',
  unreadable: 'it cannot be read',
};

/** The "Start Gatehouse when I log in" switch for `view` (an AutostartView). */
function loginSection(view) {
  const toggle = el('input', {
    type: 'checkbox',
    role: 'switch',
    id: 'autostart-switch',
    'data-testid': 'autostart-switch',
    checked: view.status === 'on',
    disabled: view.status === 'foreign' || view.status === 'unavailable',
  });
  toggle.addEventListener('change', async () => {
    toggle.disabled = true;
    try {
      showLogin(await api.autostartSet(toggle.checked, 'settings'));
    } catch (error) {
      notify(error);
      refreshLogin();
    }
  });
  return el('section', { class: 'panel', 'data-testid': 'autostart', 'data-state': view.status },
    el('h2', {}, 'Start at login'),
    el('p', {}, el('label', { for: 'autostart-switch' }, toggle, ' Start Gatehouse when I log in')),
    el('p', { class: 'muted', 'data-testid': 'autostart-note' }, ...loginNote(view)),
    view.problem
      ? el('p', { class: 'state-note tone-warn', 'data-testid': 'autostart-problem', 'data-code': view.problem.code },
        el('code', {}, view.problem.code), ' ', view.problem.message)
      : null);
}

/** Redraws the start-at-login panel with `view` (also called by the first-run choice). */
export function showLogin(view) {
  if (!loginPanel) return;
  const next = loginSection(view);
  loginPanel.replaceWith(next);
  loginPanel = next;
}

/** Start at login as the host says, or "unavailable" with why when it cannot say. */
async function loginState() {
  try {
    return await api.autostartGet();
  } catch (error) {
    return { status: 'unavailable', problem: { code: error?.code ?? 'unavailable', message: String(error?.message ?? error) } };
  }
}

async function refreshLogin() {
  showLogin(await loginState());
}

function pathRow(label, value, testid) {
  return el('div', { class: 'field-row' }, el('dt', {}, label), el('dd', { class: 'mono', 'data-testid': testid }, value ?? ''));
}

function bundleCard(b) {
  const id = b.bundle_id ?? b.bundleId ?? b.bundle;
  const expires = b.expires ? new Date(b.expires) : null;
  const expired = expires && !Number.isNaN(expires.getTime()) && expires.getTime() < Date.now();
  return el('li', { class: 'bundle', 'data-testid': 'bundle', 'data-bundle': id, 'data-source': b.source, 'data-locked': String(Boolean(b.locked)) },
    el('div', { class: 'bundle-head' },
      el('strong', { class: 'mono' }, id),
      el('span', { class: 'muted', 'data-field': 'version', 'data-version': b.version }, `version ${b.version}`),
      b.locked ? el('span', { class: 'tag tag-locked', 'data-testid': 'locked' }, 'locked') : null,
      b.source === 'demo' ? demoTag() : el('span', { class: 'tag' }, b.source ?? '')),
    el('dl', { class: 'fields' },
      el('div', { class: 'field-row' }, el('dt', {}, 'Expires'),
        el('dd', { class: expired ? 'tone-bad' : null, 'data-field': 'expires', 'data-expires': b.expires, 'data-expired': String(Boolean(expired)) },
          formatTime(b.expires), expired ? ' (expired)' : '')),
      b.posture ? el('div', { class: 'field-row' }, el('dt', {}, 'Posture'), el('dd', {}, b.posture)) : null,
      b.path ? pathRow('File', b.path) : null,
      el('div', { class: 'field-row' }, el('dt', {}, 'Signers'), el('dd', { class: 'mono' }, (b.signers ?? []).join(', '))),
      el('div', { class: 'field-row' }, el('dt', {}, 'Servers'), el('dd', { class: 'mono' }, (b.servers ?? []).join(', ')))));
}

// How audit records reach the disk, in words (SECURITY.md, "What the audit log keeps").
function auditDurability(audit) {
  const by = (audit.set_by ?? []).join(', ');
  const mode = audit.mode === 'sync'
    ? 'sync: each record is on disk before its decision takes effect'
    : `batched: each record is written before its decision takes effect and on disk within ${audit.flush_ms} ms or ${audit.flush_records} records`;
  return by ? `${mode} (set by ${by})` : mode;
}

export const refresh = coalesce(async () => {
  let s;
  let login;
  try {
    // Start at login is read on its own: a failure there must not hide the rest.
    [s, login] = await Promise.all([api.settingsGet(), loginState()]);
  } catch (error) {
    notify(error);
    return;
  }
  loginPanel = loginSection(login);
  const posture = POSTURE[s.posture] ?? { label: String(s.posture), tone: 'idle', note: '' };
  const bundles = s.bundles ?? [];
  const problems = s.problems ?? [];
  const auditWarnings = s.auditWarnings ?? [];
  replace(root,
    loginPanel,
    s.demo
      ? el('p', { class: 'state-note tone-warn', 'data-testid': 'demo-mode' },
        demoTag(), ' Demo mode: the DEMO-ONLY trust root is loaded. Its keys are public; anything it admits proves nothing.')
      : null,
    auditWarnings.length > 0
      ? el('section', { class: 'panel' },
        el('h2', {}, 'Audit log'),
        auditWarnings.map((w) => el('p', { class: 'state-note tone-warn', 'data-testid': 'audit-warning', 'data-code': w.code },
          el('code', {}, w.code), ' ', w.message)))
      : null,
    el('section', { class: 'panel' },
      el('h2', {}, 'Posture'),
      el('p', { class: 'posture' },
        el('span', { class: `badge tone-${posture.tone}`, 'data-testid': 'posture', 'data-posture': s.posture }, posture.label),
        ' ', posture.note),
      s.postureReason ? el('p', { class: 'muted' }, s.postureReason) : null,
      s.lockedBy ? el('p', {}, 'Locked by the admin bundle ', el('code', {}, s.lockedBy), ': your own trust roots and posture are ignored.') : null),
    el('section', { class: 'panel' },
      el('h2', {}, 'Trust roots'),
      bundles.length > 0
        ? el('ul', { class: 'bundles' }, bundles.map(bundleCard))
        : el('p', { class: 'empty' }, 'No trust-root bundle is installed: no server can be admitted.'),
      problems.length > 0
        ? el('div', { class: 'problems' },
          el('h3', {}, 'Bundles that were not loaded'),
          el('ul', {}, problems.map((p) => el('li', { 'data-testid': 'bundle-problem', 'data-code': p.code },
            el('code', {}, p.code), ' ', p.message))))
        : null),
    el('section', { class: 'panel' },
      el('h2', {}, 'Elicitation policy'),
      el('dl', { class: 'fields' },
        el('div', { class: 'field-row' }, el('dt', {}, 'File'),
          el('dd', { class: 'mono', 'data-testid': 'policy-path' }, s.policy?.path ?? 'built-in default policy')),
        s.policy?.source ? el('div', { class: 'field-row' }, el('dt', {}, 'Source'), el('dd', { 'data-testid': 'policy-source', 'data-source': s.policy.source }, s.policy.source)) : null,
        s.audit ? el('div', { class: 'field-row' }, el('dt', {}, 'Audit durability'),
          el('dd', { 'data-testid': 'audit-durability', 'data-mode': s.audit.mode }, auditDurability(s.audit))) : null)),
    el('section', { class: 'panel' },
      el('h2', {}, 'Where Gatehouse keeps things'),
      el('dl', { class: 'fields' },
        pathRow('Configuration', s.paths?.config, 'path-config'),
        pathRow('Data', s.paths?.data, 'path-data'),
        pathRow('Logs', s.paths?.logs, 'path-logs'),
        pathRow('Audit log', s.paths?.audit, 'path-audit'),
        s.paths?.userTrustRoots ? pathRow('Your trust roots', s.paths.userTrustRoots, 'path-user-trust-roots') : null,
        s.paths?.systemTrustRoots ? pathRow('Admin trust roots', s.paths.systemTrustRoots, 'path-system-trust-roots') : null)));
});
