// What a server sent in a resource or a prompt, as the host classified it: who sent it (the
// host's identity banner) and each item's `display`. Text is text (never HTML, markdown or
// links), an image is an <img> only through dom.js's checkedImage, and anything else is a size,
// a type and, for resource reads, a Save button. Also the argument field with completion
// suggestions that resource templates and prompts share.
import { el, replace, flag, checkedImage } from './dom.js';
import { renderBanner } from './identity.js';

/** "1 byte", "64 bytes", "9437184 bytes (9.0 MiB)". */
export function formatBytes(n) {
  const count = Number(n) || 0;
  const exact = `${count} byte${count === 1 ? '' : 's'}`;
  if (count < 1024) return exact;
  const units = ['KiB', 'MiB', 'GiB'];
  let value = count / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${exact} (${value.toFixed(1)} ${units[unit]})`;
}

/** Who sent a result: the host's banner from the admission record, never the server's words. */
export function renderSender(sender) {
  return el('div', { class: 'sender' },
    el('p', { class: 'sender-head' }, 'Sent by ', el('strong', {}, sender?.server ?? '?'), ', as Gatehouse verified it:'),
    renderBanner(sender?.banner ?? null, 'sender'));
}

function binaryBlock(display, mime, onSave) {
  const saved = el('p', { class: 'saved', 'aria-live': 'polite' });
  let save = null;
  if (onSave) {
    save = el('button', { type: 'button', class: 'secondary small', 'data-action': 'save-content' }, 'Save');
    save.addEventListener('click', async () => {
      save.disabled = true;
      replace(saved, el('span', { class: 'muted' }, 'Saving…'));
      try {
        const path = await onSave();
        replace(saved, 'Saved to ', el('code', { 'data-testid': 'saved-path' }, String(path)));
      } catch (error) {
        replace(saved, el('span', { class: 'field-error', 'data-testid': 'save-error', 'data-code': error.code },
          el('code', {}, error.code), ' ', error.message));
      } finally {
        save.disabled = false;
      }
    });
  }
  return el('div', { class: 'content-binary', 'data-testid': 'content-binary', 'data-size': display?.size ?? 0 },
    el('p', { class: 'binary-line' },
      el('span', { 'data-testid': 'binary-size' }, formatBytes(display?.size)), ', ',
      el('code', {}, mime || 'no type given'),
      onSave ? [' — ', save] : ' — not shown'),
    typeof display?.note === 'string' && display.note !== ''
      ? el('p', { class: 'content-note', 'data-testid': 'content-note' }, display.note)
      : null,
    el('p', { class: 'muted small-note' }, 'Binary content is never shown here; save it to open it with a program you trust.'),
    saved);
}

/** The kind an item is shown as: `text`, `image` (only when checkedImage accepts it) or `binary`. */
export function shownKind(display) {
  if (display?.kind === 'text') return 'text';
  if (display?.kind === 'image' && checkedImage(display)) return 'image';
  return 'binary';
}

/**
 * One item's display. `onSave` (resource reads only) resolves to the path a binary was saved to.
 */
export function renderDisplay(display, mime, { onSave = null } = {}) {
  if (display?.kind === 'text') {
    return el('pre', { class: 'content-text', 'data-testid': 'content-text' }, typeof display.text === 'string' ? display.text : '');
  }
  if (display?.kind === 'image') {
    const image = checkedImage(display, { class: 'content-image', 'data-testid': 'content-image', alt: `Image (${display.mime}) sent by the server` });
    if (image) return el('div', { class: 'content-image-frame' }, image);
  }
  return binaryBlock(display, mime, onSave);
}

/** An error for a result slot: the stable code and the sentence. */
export function renderError(testid, attrs, head, error) {
  return el('div', { class: 'result', 'data-testid': testid, 'data-is-error': 'true', 'data-code': error.code, ...attrs },
    el('p', { class: 'result-head' }, head),
    el('p', { 'data-testid': 'error' }, el('code', {}, error.code), ' ', error.message));
}

let fieldSerial = 0;

/**
 * A text field with completion suggestions: `complete(value)` resolves to values, asked for as the
 * user types (debounced; a stale answer is dropped). Suggestions are buttons
 * `[data-suggestion=VALUE]` in `[data-testid=suggestions][data-for=NAME]`; choosing one fills the
 * field. Returns `{row, input}`.
 */
export function completionField({ name, label, required = false, description = null, complete }) {
  fieldSerial += 1;
  const id = `completion-field-${fieldSerial}`;
  const listId = `${id}-suggestions`;
  const input = el('input', {
    id, name, type: 'text', autocomplete: 'off', spellcheck: 'false',
    'aria-autocomplete': 'list', 'aria-controls': listId, 'aria-required': required ? 'true' : null,
  });
  const list = el('ul', { id: listId, class: 'suggestions', role: 'listbox', 'data-testid': 'suggestions', 'data-for': name, 'aria-label': `Suggestions for ${name}`, hidden: true });
  let timer = null;
  let round = 0;
  let shown = '[]';

  const hide = () => {
    round += 1;
    shown = '[]';
    list.replaceChildren();
    flag(list, 'hidden', true);
  };
  const show = (values) => {
    const key = JSON.stringify(values);
    if (key === shown) return;
    shown = key;
    if (values.length === 0) {
      list.replaceChildren();
      flag(list, 'hidden', true);
      return;
    }
    replace(list, values.map((value) => el('li', { role: 'option' },
      el('button', { type: 'button', class: 'suggestion', 'data-suggestion': value }, value))));
    flag(list, 'hidden', false);
  };
  const ask = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const mine = ++round;
      const value = input.value;
      let values = [];
      try {
        values = await complete(value);
      } catch {
        // A server without completions (or an error) just offers nothing.
        values = [];
      }
      if (mine !== round || input.value !== value) return;
      show((Array.isArray(values) ? values : []).filter((v) => typeof v === 'string'));
    }, 150);
  };
  input.addEventListener('input', ask);
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && !list.hidden) {
      event.preventDefault();
      event.stopPropagation();
      hide();
    } else if (event.key === 'ArrowDown' && !list.hidden) {
      event.preventDefault();
      list.querySelector('button')?.focus();
    }
  });
  list.addEventListener('keydown', (event) => {
    const buttons = [...list.querySelectorAll('button')];
    const at = buttons.indexOf(document.activeElement);
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const next = at + (event.key === 'ArrowDown' ? 1 : -1);
      if (next < 0) input.focus();
      else buttons[Math.min(next, buttons.length - 1)]?.focus();
    } else if (event.key === 'Escape') {
      event.preventDefault();
      hide();
      input.focus();
    }
  });
  list.addEventListener('click', (event) => {
    const choice = event.target.closest('button[data-suggestion]');
    if (!choice) return;
    clearTimeout(timer);
    input.value = choice.dataset.suggestion;
    hide();
    input.focus();
  });

  const row = el('div', { class: 'field completion-field' },
    el('label', { class: 'field-label', for: id }, label ?? name,
      required ? el('span', { class: 'tag tag-required', 'data-testid': 'required' }, 'required') : null),
    typeof description === 'string' && description !== '' ? el('p', { class: 'field-desc' }, description) : null,
    input,
    list);
  return { row, input };
}

/** A listing group: title with a count, a note, the items or `empty` (left out with no items
 * and no `empty`). */
export function listGroup(title, note, items, empty) {
  if (items.length === 0 && !empty) return null;
  return el('div', { class: 'tool-group' },
    el('h4', {}, title, ' ', el('span', { class: 'count-inline' }, String(items.length))),
    note ? el('p', { class: 'muted' }, note) : null,
    items.length > 0 ? el('ul', { class: 'tools' }, items) : el('p', { class: 'empty' }, empty));
}

/** The other fields' values, for completing `except` (the server may narrow by them). */
export function contextOf(fields, except) {
  const context = Object.create(null);
  for (const field of fields) {
    if (field.input.name !== except && field.input.value !== '') context[field.input.name] = field.input.value;
  }
  return context;
}

/** Sets a panel's state (`data-state` is what the tests wait on). */
export function setPanelStatus(p, status) {
  p.status = status;
  p.root.dataset.state = status;
}

/**
 * The panel for `server`: `current` while the same server is shown, else `make(server)`.
 * Without a live connection it lists nothing (so looking never re-admits a server) and says
 * so for `noun`.
 */
export function attachPanel(current, server, connected, make, noun) {
  const p = current && current.server === server ? current : make(server);
  const was = p.connected;
  p.connected = Boolean(connected);
  if (!p.connected) {
    setPanelStatus(p, 'offline');
    replace(p.listSlot, el('p', { class: 'empty' }, `Not connected: connect the server to see its ${noun}.`));
  } else if (!was && p.status === 'offline') {
    setPanelStatus(p, 'idle');
  }
  return p;
}
