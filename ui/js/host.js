// The background host as the window sees it: a banner when the window lost its host (every
// command then fails; nothing fails silently), and the Quit control, which first shows what
// stops (AI clients connected now, servers connected, cards that will be declined).
import { EVENTS, onEvent, quit, quitPreview, whenHostGone } from './api.js';
import { el, replace } from './dom.js';
import { notify } from './notice.js';

const STATES = new Set(['gone', 'quitting']);

function showBanner(state, message) {
  if (!STATES.has(state)) return;
  const region = document.getElementById('host-banner');
  if (!region) return;
  const headline = state === 'gone'
    ? 'Gatehouse stopped running. This window cannot reach your servers or answer requests.'
    : 'Gatehouse is quitting.';
  const hint = state === 'gone' ? 'Close this window and start Gatehouse again.' : '';
  replace(region, el('div', { class: `host-banner state-${state}`, 'data-testid': 'host-banner', 'data-state': state },
    el('p', {}, el('strong', {}, headline)),
    message ? el('p', { class: 'muted' }, message) : null,
    hint ? el('p', {}, hint) : null));
  for (const button of document.querySelectorAll('[data-action=quit-open]')) button.disabled = true;
}

function names(list) {
  return Array.isArray(list) && list.length ? list.join(', ') : 'none';
}

function planView(plan) {
  const cards = (plan.cards ?? 0) + (plan.signIns ?? 0);
  return el('ul', { class: 'quit-list' },
    el('li', { 'data-quit': 'clients', 'data-count': plan.clients?.length ?? 0 },
      'AI clients connected now lose Gatehouse: ', names(plan.clients)),
    el('li', { 'data-quit': 'servers', 'data-count': plan.servers?.length ?? 0 },
      'Servers connected are closed: ', names(plan.servers)),
    el('li', { 'data-quit': 'cards', 'data-count': cards },
      cards === 1 ? '1 request waiting for you is declined' : `${cards} requests waiting for you are declined`));
}

async function openQuit() {
  const dialog = document.getElementById('quit-dialog');
  const slot = document.getElementById('quit-plan');
  replace(slot, el('p', { class: 'muted' }, 'Looking at what is running…'));
  if (!dialog.open) dialog.showModal();
  try {
    replace(slot, planView(await quitPreview()));
  } catch (error) {
    replace(slot, el('p', { 'data-testid': 'quit-error', 'data-code': error.code }, error.message));
  }
}

async function confirmQuit() {
  const dialog = document.getElementById('quit-dialog');
  try {
    await quit();
    showBanner('quitting', '');
  } catch (error) {
    notify(error);
  } finally {
    dialog.close();
  }
}

export async function init() {
  whenHostGone((error) => showBanner('gone', error.message));
  for (const button of document.querySelectorAll('[data-action=quit-open]')) {
    button.addEventListener('click', () => openQuit());
  }
  document.querySelector('#quit-dialog [data-action=quit-confirm]')?.addEventListener('click', () => confirmQuit());
  document.querySelector('#quit-dialog [data-action=quit-cancel]')?.addEventListener('click', () => {
    document.getElementById('quit-dialog').close();
  });
  try {
    await onEvent(EVENTS.host, (payload) => showBanner(payload?.state, payload?.message ?? ''));
  } catch (error) {
    notify(error);
  }
}
