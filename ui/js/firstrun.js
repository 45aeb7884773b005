// The first-run choice (issue 26): "Keep Gatehouse available to your AI clients: start it when
// you log in?" Asked once: the desk remembers the answer in its data directory (and a choice
// made in Settings counts as the answer). Yes writes the login entry; Not now changes nothing.
// A panel at the top of the window, not a modal dialog: a consent card that arrives at first
// start must not wait behind it.
import * as api from './api.js';
import { el } from './dom.js';
import { notify } from './notice.js';

let panel = null;

/**
 * Asks the question when the desk says it is pending; `onAnswered(view)` gets the new state
 * (Settings redraws its switch with it).
 */
export async function maybeAsk(onAnswered = () => {}) {
  let view;
  try {
    view = await api.autostartGet();
  } catch {
    // Not offered by this host: nothing to ask.
    return;
  }
  if (!view.firstRunPending || panel) return;
  const yes = el('button', { type: 'button', class: 'primary', 'data-action': 'first-run-yes' }, 'Yes');
  const notNow = el('button', { type: 'button', class: 'secondary', 'data-action': 'first-run-not-now' }, 'Not now');
  panel = el('section', { class: 'panel', 'data-testid': 'first-run', 'aria-labelledby': 'first-run-title' },
    el('h2', { id: 'first-run-title' }, 'Keep Gatehouse available to your AI clients: start it when you log in?'),
    el('p', { class: 'muted' }, 'Gatehouse then runs in the background from login, with no window, so requests from your AI clients that need your answer reach you. You can change this in Settings.'),
    el('div', { class: 'actions' }, yes, notNow));
  const answer = async (on) => {
    yes.disabled = true;
    notNow.disabled = true;
    try {
      const next = await api.autostartSet(on, 'first_run');
      if (next.problem) notify(next.problem);
      onAnswered(next);
      panel.remove();
      panel = null;
    } catch (error) {
      notify(error);
      yes.disabled = false;
      notNow.disabled = false;
    }
  };
  yes.addEventListener('click', () => answer(true));
  notNow.addEventListener('click', () => answer(false));
  const notice = document.getElementById('notice');
  if (notice) notice.after(panel);
  else document.querySelector('main')?.prepend(panel);
}
