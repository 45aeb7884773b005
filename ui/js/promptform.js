// A form elicitation's fields, built from the host's parsed FormSchema (never from the raw
// schema), validated inline by the host's own validator (prompt_validate).
import * as api from './api.js';
import { el, replace } from './dom.js';

const INPUT_TYPE = { email: 'email', uri: 'url', date: 'date' };
const FORMAT_HINT = {
  email: 'An email address',
  uri: 'A full URL',
  date: 'A date (YYYY-MM-DD)',
  'date-time': 'A date and time in RFC 3339, e.g. 2025-06-01T14:30:00Z',
};

function bounds(low, high, unit) {
  if (low != null && high != null) return `${low} to ${high} ${unit}`;
  if (low != null) return `at least ${low} ${unit}`;
  if (high != null) return `at most ${high} ${unit}`;
  return null;
}

function hintFor(kind) {
  switch (kind.type) {
    case 'text': {
      const length = bounds(kind.min_length, kind.max_length, 'characters');
      return [kind.format ? FORMAT_HINT[kind.format] : null, length].filter(Boolean).join('; ') || null;
    }
    case 'number': {
      const range = bounds(kind.minimum, kind.maximum, '').trim();
      return `${kind.integer ? 'A whole number' : 'A number'}${range ? `, ${range}` : ''}`;
    }
    case 'multi_select': {
      const count = bounds(kind.min_items, kind.max_items, 'choices');
      return count ? `Choose ${count}` : 'Choose any';
    }
    default:
      return null;
  }
}

function textInput(id, field, value) {
  const format = field.kind.format;
  return el('input', {
    id, name: field.name,
    type: INPUT_TYPE[format] ?? 'text',
    value: typeof value === 'string' ? value : null,
    placeholder: format === 'date-time' ? 'YYYY-MM-DDThh:mm:ssZ' : null,
    autocomplete: 'off', spellcheck: 'false',
    required: field.required,
  });
}

function numberInput(id, field, value) {
  const { integer, minimum, maximum } = field.kind;
  return el('input', {
    id, name: field.name, type: 'number',
    step: integer ? '1' : 'any', min: minimum, max: maximum,
    value: typeof value === 'number' ? String(value) : null,
    required: field.required,
  });
}

function selectInput(id, field, value) {
  const hasValue = typeof value === 'string';
  // Without a default there is no silent first choice: the user picks one.
  const placeholder = !hasValue || !field.required
    ? el('option', { value: '', selected: !hasValue }, field.required ? 'Choose…' : '(none)')
    : null;
  return el('select', { id, name: field.name, required: field.required },
    placeholder,
    field.kind.choices.map((choice) =>
      el('option', { value: choice.value, selected: hasValue && value === choice.value }, choice.title)));
}

function checkboxes(id, field, value) {
  const chosen = new Set(Array.isArray(value) ? value : []);
  return el('div', { class: 'choices', id },
    field.kind.choices.map((choice, i) =>
      el('label', { class: 'choice' },
        el('input', { type: 'checkbox', name: field.name, value: choice.value, id: `${id}-${i}`, checked: chosen.has(choice.value) }),
        el('span', {}, choice.title))));
}

/** Reads one field's answer: `{value}` to send, `{}` to leave out, `{error}` when unreadable. */
function readField(field, root) {
  const inputs = [...root.querySelectorAll('[name]')].filter((n) => n.name === field.name);
  switch (field.kind.type) {
    case 'text': {
      // A half-typed date reads as "" from a date input; say so rather than drop it.
      if (inputs[0].validity.badInput) return { error: `is not a complete ${field.kind.format ?? 'value'}` };
      const v = inputs[0].value;
      return v === '' ? {} : { value: v };
    }
    case 'number': {
      const input = inputs[0];
      if (input.validity.badInput) return { error: 'is not a number' };
      const v = input.value.trim();
      return v === '' ? {} : { value: Number(v) };
    }
    case 'boolean':
      return { value: inputs[0].checked };
    case 'select': {
      const v = inputs[0].value;
      return v === '' ? {} : { value: v };
    }
    case 'multi_select': {
      const values = inputs.filter((n) => n.checked).map((n) => n.value);
      return values.length === 0 ? {} : { value: values };
    }
    default:
      return { error: `has a kind this window does not know (${field.kind.type})` };
  }
}

/**
 * Builds the form of a `{mode: "form"}` prompt body. `onValidity(valid)` is called whenever the
 * verdict of the host's validator changes. `problems` are the host's objections to a previous
 * answer, shown from the start.
 */
export function buildPromptForm(promptId, body, { problems = [], onValidity = () => {} } = {}) {
  const fields = body.schema?.fields ?? [];
  const defaults = body.defaults ?? {};
  const sensitive = new Map((body.fields ?? []).map((f) => [f.name, f]));
  const slots = new Map();
  const controls = new Map();
  const touched = new Set();
  let showAll = problems.length > 0;
  let errors = problems;
  let valid = false;
  let timer = null;
  let round = 0;

  const general = el('div', { class: 'form-errors' });
  const pending = el('p', { class: 'form-pending', 'aria-live': 'polite' });
  const titles = new Map(fields.map((f) => [f.name, f.title ?? f.name]));
  const rows = fields.map((field, i) => {
    const id = `prompt-${promptId}-field-${i}`;
    const value = Object.hasOwn(defaults, field.name) ? defaults[field.name] : undefined;
    const label = field.title ?? field.name;
    const check = sensitive.get(field.name);
    const slot = el('div', { class: 'error-slot', id: `${id}-error`, 'aria-live': 'polite' });
    slots.set(field.name, slot);
    const hint = hintFor(field.kind);
    const extras = [
      field.description ? el('p', { class: 'field-desc' }, field.description) : null,
      hint ? el('p', { class: 'field-hint' }, hint) : null,
    ];
    const tags = [
      field.required ? el('span', { class: 'tag tag-required' }, 'required') : null,
      check?.sensitive ? el('span', { class: 'tag tag-sensitive' }, 'sensitive') : null,
    ];
    let control;
    switch (field.kind.type) {
      case 'text': control = textInput(id, field, value); break;
      case 'number': control = numberInput(id, field, value); break;
      case 'select': control = selectInput(id, field, value); break;
      case 'boolean': {
        const box = el('input', { id, name: field.name, type: 'checkbox', checked: value === true, 'aria-describedby': `${id}-error` });
        controls.set(field.name, box);
        return el('div', { class: 'field field-boolean' },
          el('label', { class: 'choice', for: id }, box, el('span', { class: 'field-label' }, label), tags),
          extras, slot);
      }
      case 'multi_select': {
        const group = el('fieldset', { class: 'field', 'aria-describedby': `${id}-error` },
          el('legend', { class: 'field-label' }, label, tags),
          extras, checkboxes(id, field, value), slot);
        controls.set(field.name, group);
        return group;
      }
      default:
        control = el('p', { class: 'field-desc' }, 'This field cannot be shown.');
    }
    control.setAttribute('aria-describedby', `${id}-error`);
    controls.set(field.name, control);
    return el('div', { class: 'field' },
      el('label', { class: 'field-label', for: id }, label, tags),
      extras, control, slot);
  });

  const element = el('div', { class: 'prompt-form' }, rows, general, pending);

  function collect() {
    // Field names are the server's: a null-prototype object keeps "__proto__" or "toString"
    // ordinary keys (and Object.prototype is frozen in the app).
    const content = Object.create(null);
    const local = [];
    for (const field of fields) {
      const read = readField(field, element);
      if (read.error) local.push({ field: field.name, problem: read.error });
      else if ('value' in read) content[field.name] = read.value;
    }
    return { content, local };
  }

  function render() {
    const byField = new Map();
    const stray = [];
    for (const error of errors) {
      if (!slots.has(error.field)) stray.push(error);
      else if (showAll || touched.has(error.field)) {
        byField.set(error.field, [...(byField.get(error.field) ?? []), error.problem]);
      }
    }
    for (const [name, slot] of slots) {
      const messages = byField.get(name);
      replace(slot, messages ? el('p', { class: 'field-error', 'data-error-for': name }, messages.join('; ')) : null);
      controls.get(name)?.setAttribute('aria-invalid', messages ? 'true' : 'false');
    }
    replace(general, stray.map((e) => el('p', { class: 'field-error', 'data-error-for': e.field }, `${e.field}: ${e.problem}`)));
    // Errors of untouched fields stay quiet, but a disabled Submit still says what it waits for.
    const waiting = [...new Set(errors.filter((e) => slots.has(e.field) && !byField.has(e.field)).map((e) => titles.get(e.field)))];
    replace(pending, waiting.length > 0 ? `To submit, fill in: ${waiting.join(', ')}` : null);
  }

  /** Runs the host's validator now; resolves to whether the answers are valid. */
  async function validateNow() {
    clearTimeout(timer);
    const mine = ++round;
    const { content, local } = collect();
    let remote = [];
    try {
      remote = await api.promptValidate(promptId, content);
    } catch {
      // The card may have just ended; the answer itself is validated by Rust again anyway.
      remote = [];
    }
    if (mine !== round) return valid;
    errors = [...local, ...(Array.isArray(remote) ? remote : [])];
    valid = errors.length === 0;
    render();
    onValidity(valid);
    return valid;
  }

  function onEdit(event) {
    const name = event.target?.name;
    if (name) touched.add(name);
    clearTimeout(timer);
    timer = setTimeout(validateNow, 150);
  }
  element.addEventListener('input', onEdit);
  element.addEventListener('change', onEdit);

  render();
  validateNow();

  return {
    element,
    validateNow,
    isValid: () => valid,
    content: () => collect().content,
    /** After a failed submit: show every error, and focus the first field with one. */
    revealErrors() {
      showAll = true;
      render();
      element.querySelector('[data-error-for]')?.closest('.field')
        ?.querySelector('input, select, textarea')?.focus();
    },
    showProblems(next) {
      if (next.length === 0) return;
      showAll = true;
      errors = next;
      valid = false;
      render();
      onValidity(valid);
    },
    firstField: () => element.querySelector('input, select, textarea'),
  };
}
