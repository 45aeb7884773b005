// A form to call one allowed tool, generated from its inputSchema: simple properties get fitting
// inputs, anything else a JSON textarea. The tool's own schema is the server's text: what is
// shown of it (names, titles, descriptions, enum labels) comes from the tool's review, escaped
// by the host (invisible characters as \u{XXXX}), and is set as text only; the raw schema gives
// only structure and the exact names and values a call sends.
import * as api from './api.js';
import { el, replace } from './dom.js';
import { asText } from './util.js';

/** string | number | integer | boolean | enum | json */
function kindOf(schema) {
  if (!schema || typeof schema !== 'object') return 'json';
  if (Array.isArray(schema.enum) && schema.enum.length > 0 && schema.enum.every((v) => typeof v === 'string')) return 'enum';
  let type = schema.type;
  if (Array.isArray(type)) {
    const concrete = type.filter((t) => t !== 'null');
    type = concrete.length === 1 ? concrete[0] : null;
  }
  return ['string', 'number', 'integer', 'boolean'].includes(type) ? type : 'json';
}

function control(id, name, kind, schema, isRequired, shown) {
  const fallback = schema?.default;
  switch (kind) {
    case 'string':
      return el('input', { id, name, type: 'text', value: typeof fallback === 'string' ? fallback : null, autocomplete: 'off', spellcheck: 'false' });
    case 'number':
    case 'integer':
      return el('input', {
        id, name, type: 'number', step: kind === 'integer' ? '1' : 'any',
        min: schema.minimum, max: schema.maximum,
        value: typeof fallback === 'number' ? String(fallback) : null,
      });
    case 'boolean':
      return el('input', { id, name, type: 'checkbox', checked: fallback === true });
    case 'enum':
      return el('select', { id, name },
        fallback === undefined || !isRequired ? el('option', { value: '', selected: fallback === undefined }, isRequired ? 'Choose…' : '(none)') : null,
        schema.enum.map((v, i) => el('option', { value: v, selected: v === fallback }, shown.enumLabels?.[i] ?? escapeInvisible(v))));
    default:
      return el('textarea', {
        id, name, rows: '3', spellcheck: 'false', class: 'mono',
        placeholder: `JSON${schema?.type ? ` (${asText(schema.type, 0)})` : ''}`,
      }, fallback === undefined ? '' : asText(fallback, 2));
  }
}

/** One property's value: `{value}`, `{}` to leave it out, or `{error}`. */
function read(input, kind, schema, isRequired) {
  switch (kind) {
    case 'string':
    case 'enum':
      return input.value === '' ? {} : { value: input.value };
    case 'number':
    case 'integer': {
      if (input.validity.badInput) return { error: 'is not a number' };
      const text = input.value.trim();
      if (text === '') return {};
      const n = Number(text);
      if (kind === 'integer' && !Number.isInteger(n)) return { error: 'must be a whole number' };
      return { value: n };
    }
    case 'boolean':
      // An untouched optional checkbox without a default is left out rather than sent as false.
      return input.checked || isRequired || schema?.default !== undefined ? { value: input.checked } : {};
    default: {
      const text = input.value.trim();
      if (text === '') return {};
      try {
        return { value: JSON.parse(text) };
      } catch {
        return { error: 'is not valid JSON' };
      }
    }
  }
}

function renderToolResult(outcome) {
  const isError = Boolean(outcome.isError);
  const count = outcome.elicitations?.length ?? 0;
  return el('div', { class: 'result', 'data-testid': 'tool-result', 'data-is-error': String(isError) },
    el('p', { class: 'result-head' }, isError ? 'The tool reported an error' : 'Result'),
    el('pre', { class: 'result-text', 'data-testid': 'tool-result-text' }, outcome.text ?? ''),
    count > 0 ? el('p', { class: 'muted' }, `${count} elicitation${count === 1 ? '' : 's'} during this call (see Prompts).`) : null,
    outcome.result !== undefined
      ? el('details', { class: 'raw' }, el('summary', {}, 'Raw result'), el('pre', { class: 'mono' }, asText(outcome.result)))
      : null);
}

function renderCallError(error) {
  return el('div', { class: 'result', 'data-testid': 'tool-result', 'data-is-error': 'true', 'data-code': error.code },
    el('p', { class: 'result-head' }, 'The call was not made or failed'),
    el('p', {}, el('code', {}, error.code), ' ', error.message));
}

// The same characters as gatehouse_review::is_invisible: a last resort for text the review
// did not carry (it always does for a listed tool).
const INVISIBLE = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF0-\uFFF8]|[\u{1BCA0}-\u{1BCA3}]|[\u{1D173}-\u{1D17A}]|[\u{E0000}-\u{E0FFF}]/gu;
function escapeInvisible(text) {
  return String(text).replace(INVISIBLE, (c) => `\\u{${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}}`);
}

/** What the form shows of property `name`: the review's escaped text, else the name escaped. */
function shownField(review, name) {
  const field = review?.fields?.[name];
  if (field && typeof field === 'object') return field;
  return { shownName: escapeInvisible(name), title: null, description: null, enumLabels: [] };
}

/**
 * The form for `tool` of `server` (the raw listed tool, for its structure and exact names);
 * `review` is its `ToolReview`, whose escaped text is all the form shows; `onClose` removes it.
 */
export function buildToolForm(server, tool, { onClose, review = null }) {
  const schema = tool.inputSchema ?? {};
  const properties = schema.properties && typeof schema.properties === 'object' ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const entries = Object.entries(properties).map(([name, prop], i) => {
    const kind = kindOf(prop);
    const id = `tool-field-${i}`;
    const shown = shownField(review, name);
    const input = control(id, name, kind, prop, required.has(name), shown);
    const error = el('div', { class: 'error-slot', 'aria-live': 'polite' });
    const label = [typeof shown.title === 'string' ? shown.title : shown.shownName, required.has(name) ? el('span', { class: 'tag tag-required' }, 'required') : null];
    const description = typeof shown.description === 'string' ? el('p', { class: 'field-desc' }, shown.description) : null;
    const row = kind === 'boolean'
      ? el('div', { class: 'field field-boolean' }, el('label', { class: 'choice', for: id }, input, el('span', { class: 'field-label' }, label)), description, error)
      : el('div', { class: 'field' }, el('label', { class: 'field-label', for: id }, label), description, input, error);
    return { name, kind, prop, input, error, row };
  });

  const run = el('button', { type: 'submit', class: 'primary', 'data-action': 'run-tool' }, 'Run');
  const close = el('button', { type: 'button', class: 'secondary', 'data-action': 'close-tool' }, 'Close');
  const resultSlot = el('div', { class: 'result-slot', 'aria-live': 'polite' });
  const toolName = typeof review?.name === 'string' ? review.name : escapeInvisible(tool.name ?? '?');
  const form = el('form', { id: 'tool-form', class: 'tool-form', novalidate: true, 'aria-label': `Run ${toolName}` },
    el('p', { class: 'form-title' }, 'Run ', el('code', {}, toolName), ' on ', el('strong', {}, server)),
    entries.length === 0 ? el('p', { class: 'muted' }, 'This tool takes no arguments.') : entries.map((e) => e.row),
    el('div', { class: 'actions' }, run, close),
    resultSlot);

  close.addEventListener('click', () => onClose());
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const args = Object.create(null); // property names are the server's; see promptform.js
    let ok = true;
    for (const e of entries) {
      const value = read(e.input, e.kind, e.prop, required.has(e.name));
      replace(e.error, value.error ? el('p', { class: 'field-error' }, value.error) : null);
      if (value.error) ok = false;
      else if ('value' in value) args[e.name] = value.value;
    }
    if (!ok) return;
    run.disabled = true;
    run.textContent = 'Running…';
    replace(resultSlot, el('p', { class: 'muted' }, 'Running. If the server asks you something, Gatehouse will show it.'));
    try {
      replace(resultSlot, renderToolResult(await api.toolCall(server, tool.name, args)));
    } catch (error) {
      replace(resultSlot, renderCallError(error));
    } finally {
      run.disabled = false;
      run.textContent = 'Run';
    }
  });
  return form;
}
