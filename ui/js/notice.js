// One notice line at the top of the window for failures that belong to no particular card.
import { el, replace } from './dom.js';

let timer = null;

/** Shows an error (`{code, message}`) or a plain sentence; it clears itself after a while. */
export function notify(what, { tone = 'error' } = {}) {
  const region = document.getElementById('notice');
  if (!region) return;
  clearTimeout(timer);
  const body = typeof what === 'string'
    ? [what]
    : [el('code', {}, what.code ?? 'error'), ' ', what.message ?? ''];
  const close = el('button', { type: 'button', class: 'ghost small', 'aria-label': 'Dismiss notice' }, '×');
  close.addEventListener('click', () => clearNotice());
  replace(region, el('div', { class: `notice tone-${tone}`, 'data-testid': 'notice' }, el('p', {}, ...body), close));
  timer = setTimeout(clearNotice, tone === 'error' ? 15000 : 5000);
}

function clearNotice() {
  clearTimeout(timer);
  const region = document.getElementById('notice');
  if (region) region.replaceChildren();
}
