// Sign-ins (MCP authorization): one card per sign-in a server asked for, the oldest in the
// modal dialog#sign-in-dialog. All state lives in Rust; this module only mirrors
// sign_in_cards and sends the user's explicit Open or Cancel back, by the card's id.
//
// As on the URL-elicitation card, everything is text (no markup, no links): the server, who
// admission says it is, the resource, the authorization server, the scopes, and exactly the
// URL that will be opened with its host highlighted. Nothing opens until Open is pressed.
import * as api from './api.js';
import { el, append, replace, focusables } from './dom.js';
import { notify } from './notice.js';
import { coalesce, hostIndex } from './util.js';

let dialog = null;
let dialogBody = null;
let shown = null; // {id, key, view}
let closingOnPurpose = false;
// Results already told (or there before this window loaded): each is told once.
let toldResults = null;

/** Sets up the dialog. */
export function init() {
  dialog = document.getElementById('sign-in-dialog');
  dialogBody = document.getElementById('sign-in-dialog-body');
  // Esc and any other way of closing the dialog answer "cancel"; it is never just dismissed.
  dialog.addEventListener('cancel', (event) => {
    event.preventDefault();
    shown?.view.act('cancel');
  });
  dialog.addEventListener('close', () => {
    if (!closingOnPurpose && shown) {
      const view = shown.view;
      dialog.showModal();
      view.act('cancel');
    }
    closingOnPurpose = false;
  });
  dialog.addEventListener('keydown', onDialogKey);
}

export const refresh = coalesce(async () => {
  let state;
  try {
    state = await api.signInCards();
  } catch (error) {
    notify(error);
    return;
  }
  const cards = state?.cards ?? [];
  tellResults(state?.results ?? []);
  syncDialog(cards);
});

function tellResults(results) {
  const first = toldResults === null;
  toldResults ??= new Set();
  for (const result of results) {
    if (toldResults.has(result.id)) continue;
    toldResults.add(result.id);
    if (first) continue;
    if (result.signedIn) notify(`Signed in to ${result.server}.`, { tone: 'good' });
    else notify({ code: result.code ?? 'sign_in_failed', message: `The sign-in to ${result.server} was not completed.` });
  }
}

function syncDialog(cards) {
  const next = cards[0];
  if (!next) {
    closeDialog();
    return;
  }
  // Redrawn only when the card changed (its state, or the queue behind it): a redraw would
  // lose the focus.
  const key = JSON.stringify([next.id, next.state, next.cancelling, cards.length]);
  if (shown && shown.key === key) return;
  const view = renderCard(next, cards.length - 1);
  shown = { id: next.id, key, view };
  replace(dialogBody, view.element);
  dialog.setAttribute('aria-label', `Sign in to ${next.request?.server ?? ''}`);
  if (!dialog.open) dialog.showModal();
  view.focusFirst();
}

function closeDialog() {
  shown = null;
  if (dialog.open) {
    closingOnPurpose = true;
    dialog.close();
  }
  dialogBody.replaceChildren();
}

// Tab and Shift+Tab stay inside the dialog. Enter does nothing: opening takes a click on Open.
function onDialogKey(event) {
  if (!shown) return;
  // WebKitGTK may report Shift+Tab (ISO_Left_Tab) with key "Unidentified"; code is reliable.
  if (event.key !== 'Tab' && event.code !== 'Tab') return;
  const nodes = focusables(dialog);
  if (nodes.length === 0) return;
  const first = nodes[0];
  const last = nodes[nodes.length - 1];
  if (event.shiftKey && (document.activeElement === first || !nodes.includes(document.activeElement))) {
    event.preventDefault();
    last.focus();
  } else if (!event.shiftKey && document.activeElement === last) {
    event.preventDefault();
    first.focus();
  }
}

function row(label, testid, value, { mono = false } = {}) {
  return el('div', { class: 'field-row' },
    el('dt', {}, label),
    el('dd', { 'data-testid': testid, class: mono ? 'mono' : null }, value ?? ''));
}

function urlBlock(request) {
  const full = request.url ?? '';
  const host = request.authorization_host ?? '';
  const at = hostIndex(full, host);
  const fullBox = at >= 0
    ? el('pre', { class: 'url-full', 'data-testid': 'url-full' },
      full.slice(0, at), el('mark', { class: 'url-host', 'data-testid': 'url-host' }, host), full.slice(at + host.length))
    : el('pre', { class: 'url-full', 'data-testid': 'url-full' }, full);
  return el('div', { class: 'url-card' },
    el('p', { class: 'url-label' }, 'Exactly what will be opened, in your system browser:'),
    fullBox,
    el('dl', { class: 'fields url-hosts' },
      el('div', { class: 'field-row' }, el('dt', {}, 'Host'),
        el('dd', { class: 'mono' }, at >= 0 ? host : el('span', { 'data-testid': 'url-host' }, host)))));
}

function stateBlock(card) {
  if (card.state !== 'waiting') return null;
  if (card.cancelling) {
    return el('p', { class: 'state-note tone-busy', 'data-testid': 'sign-in-waiting' },
      el('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Stopping the sign-in…');
  }
  return el('p', { class: 'state-note tone-busy', 'data-testid': 'sign-in-waiting' },
    el('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Finish signing in in your browser');
}

function button(action, label, kind = 'secondary') {
  return el('button', { type: 'button', class: kind, 'data-action': action }, label);
}

/** The card shown in the dialog; `queued` more wait behind it. */
function renderCard(card, queued) {
  const { id, request = {} } = card;
  const stepUp = request.reason === 'step_up';
  const asking = card.state === 'asking';
  let busy = false;
  const status = el('p', { class: 'action-error', 'aria-live': 'assertive' });
  const actions = el('div', { class: 'actions' });
  const scopes = request.scopes ?? [];

  const element = el('article', {
    class: `prompt-card sign-in-card state-${card.state}`, tabindex: '-1',
    'data-testid': 'sign-in-card', 'data-sign-in-id': id, 'data-state': card.state,
    'data-reason': request.reason, 'data-server': request.server,
  },
  el('div', { class: 'card-scroll' },
    el('header', { class: 'card-head' },
      el('h3', { class: 'card-title' },
        stepUp ? 'Grant more access to ' : 'Sign in to ',
        el('span', { class: 'server-name', 'data-testid': 'sign-in-server' }, request.server ?? '')),
      el('span', { class: `badge tone-${asking ? 'warn' : 'busy'}`, 'data-testid': 'sign-in-state' },
        asking ? 'Needs your answer' : 'Waiting')),
    el('p', { class: 'muted' }, stepUp
      ? 'The server needs more access than it was given. Signing in again asks the authorization server for it; what was already granted is kept.'
      : 'The server requires signing in. Gatehouse opens the authorization server’s page in your system browser; the token it gets is for this server only and is kept in the system keychain.'),
    el('dl', { class: 'fields sign-in-fields' },
      row('Server', 'sign-in-verdict', request.verdict),
      request.identity ? row('Verified identity', 'sign-in-identity', request.identity, { mono: true }) : null,
      row('Resource', 'sign-in-resource', request.resource, { mono: true }),
      row('Authorization server', 'sign-in-issuer', request.issuer ?? '(no issuer published)', { mono: true }),
      row('Access asked for', 'sign-in-scopes', scopes.length > 0 ? scopes.join(' ') : '(no scopes named)', { mono: true })),
    urlBlock(request),
    queued > 0
      ? el('p', { class: 'state-note tone-warn' }, queued === 1
        ? 'One more sign-in waits after this one.'
        : `${queued} more sign-ins wait after this one.`)
      : null,
    stateBlock(card)),
  status,
  actions);

  async function act(action) {
    if (busy) return;
    const reply = action === 'open' ? 'open' : 'cancel';
    if (reply === 'open' && !asking) return;
    busy = true;
    for (const b of actions.querySelectorAll('button')) b.disabled = true;
    replace(status);
    try {
      await api.signInAnswer(id, reply);
    } catch (error) {
      replace(status, el('code', {}, error.code ?? 'error'), ' ', error.message ?? '');
      notify(error);
    } finally {
      busy = false;
      for (const b of actions.querySelectorAll('button')) b.disabled = false;
      refresh();
    }
  }

  append(actions,
    asking ? button('open', 'Open in browser', 'primary') : null,
    button('cancel', 'Cancel'));
  actions.addEventListener('click', (event) => {
    const target = event.target.closest('button[data-action]');
    if (target && !target.disabled) act(target.dataset.action);
  });

  return {
    element,
    act,
    // The card itself takes the focus, never Open: one stray Enter must not open anything.
    focusFirst: () => element.focus(),
  };
}
