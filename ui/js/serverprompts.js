// A server's MCP prompts in its detail (the Prompts tab; not to be confused with the Prompts
// view, which is the elicitation cards): the listing as the gate sees it (allowed, hidden,
// blocked with the reason), a form per prompt (one field per argument, required ones marked,
// with completion), and the messages it returns with who sent them. Kept across redraws of
// the detail, like the tool form.
import * as api from './api.js';
import { el, replace } from './dom.js';
import { notify } from './notice.js';
import {
  renderSender, renderDisplay, renderError, completionField, shownKind, listGroup, contextOf, setPanelStatus, attachPanel,
} from './content.js';

let panel = null;

function newPanel(server) {
  const refresh = el('button', { type: 'button', class: 'secondary small', 'data-action': 'refresh-prompts' }, 'Refresh');
  const listSlot = el('div', { class: 'context-list' });
  const root = el('div', { class: 'context-panel', 'data-testid': 'server-prompts-panel', 'data-server': server, 'data-state': 'idle' },
    el('div', { class: 'panel-head' },
      el('p', { class: 'muted' }, 'Prompts are message templates the server offers. Gatehouse gets only those its gate allows and shows every message as text.'),
      refresh),
    listSlot);
  const state = {
    server, root, listSlot,
    connected: false,
    status: 'idle',
    groups: null,
    canApprove: false,
    open: null, // {name, definition, form}
    loadRound: 0,
  };
  refresh.addEventListener('click', () => load(state));
  return state;
}

/** The Prompts panel of `server`; lists nothing without a live connection. */
export function promptsPanel(server, connected) {
  panel = attachPanel(panel, server, connected, newPanel, 'prompts');
  return panel.root;
}

/** The tab was shown: lists the prompts the first time (and after a reconnect). */
export function promptsShown(server) {
  if (panel && panel.server === server && panel.connected && panel.status === 'idle') load(panel);
}

export function forgetPrompts(server) {
  if (!server || panel?.server === server) panel = null;
}

async function load(p) {
  if (!p.connected) return;
  const round = ++p.loadRound;
  setPanelStatus(p, 'loading');
  if (!p.groups) {
    replace(p.listSlot, el('p', { class: 'muted', role: 'status' }, el('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Listing prompts…'));
  }
  let groups;
  try {
    const [listed, settings] = await Promise.all([
      api.serverPrompts(p.server),
      api.settingsGet().catch(() => null),
    ]);
    groups = listed;
    p.canApprove = settings?.posture === 'warn';
  } catch (error) {
    if (round !== p.loadRound) return;
    setPanelStatus(p, 'error');
    replace(p.listSlot, renderError('server-prompts-error', {}, 'Gatehouse could not list the prompts', error));
    return;
  }
  if (round !== p.loadRound) return;
  p.groups = groups ?? {};
  const allowed = p.groups.allowed ?? [];
  if (p.open) {
    const still = allowed.find((prompt) => prompt.name === p.open.name);
    if (!still || JSON.stringify(still) !== p.open.definition) p.open = null;
  }
  setPanelStatus(p, 'loaded');
  drawList(p);
}

const WHY = {
  prompt_not_admitted: 'Not on this server\'s prompt allow-list: Gatehouse refuses to get it.',
  prompt_pin_mismatch: 'Its definition changed since it was pinned: blocked until it is approved again.',
};

// Labels of the review's finding kinds (gatehouse_review::FindingKind codes), as tool cards.
const FINDING_KINDS = {
  invisible_characters: 'Invisible or direction-changing characters',
  model_instruction: 'Instructions aimed at the model',
  other_server_tool: "Names another server's tool",
  other_tool_instruction: 'Says how another tool must be used',
  secret_request: 'Asks for a secret',
};

/** The review's findings as a list (as tool cards show them), every value set as text. */
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

// The answer's text fields are escaped by the host (invisible characters as \u{XXXX}); `name`
// (of a prompt or an argument) is the exact name, only ever sent back, and `shownName` the
// escaped one, the only one shown.
const shownName = (item) => (typeof item?.shownName === 'string' ? item.shownName : '?');

function promptItem(p, prompt, status, reason = null) {
  const name = typeof prompt.name === 'string' ? prompt.name : '?';
  const shown = shownName(prompt);
  const mine = status === 'allowed' && p.open?.name === name;
  const open = status === 'allowed'
    ? el('button', { type: 'button', class: 'secondary small', 'data-action': 'open-prompt', 'aria-expanded': String(mine) }, mine ? 'Hide' : 'Open')
    : null;
  // One with a high finding is approved only through the explicit "Approve despite findings".
  const despite = prompt.needsAcknowledgement === true;
  const approve = status !== 'allowed' && p.canApprove
    ? el('button', {
      type: 'button',
      class: despite ? 'danger small' : 'secondary small',
      'data-action': despite ? 'approve-prompt-despite-findings' : 'approve-prompt',
    }, despite ? 'Approve despite findings' : 'Approve')
    : null;
  open?.addEventListener('click', () => toggle(p, prompt));
  approve?.addEventListener('click', () => approveName(p, name, shown, despite, approve));
  const args = Array.isArray(prompt.arguments) ? prompt.arguments : [];
  const findings = Array.isArray(prompt.findings) ? prompt.findings : [];
  return el('li', { class: `tool tool-${status} server-prompt`, 'data-prompt': name, 'data-prompt-status': status, 'data-findings': String(findings.length) },
    el('div', { class: 'tool-head' },
      el('code', { class: 'tool-name' }, shown),
      typeof prompt.title === 'string' && prompt.title !== shown ? el('span', { class: 'muted' }, prompt.title) : null,
      el('span', { class: 'head-actions' }, open, approve)),
    typeof prompt.description === 'string' && prompt.description !== '' ? el('p', { class: 'tool-desc' }, prompt.description) : null,
    args.length > 0
      ? el('p', { class: 'muted item-title' }, 'Arguments: ', args.map((a, i) => [i > 0 ? ', ' : '', el('code', {}, shownName(a)), a?.required ? ' (required)' : '']))
      : null,
    findingsList(findings),
    reason ? el('p', { class: 'reason', 'data-testid': 'reason', 'data-code': reason }, el('code', {}, reason), ' ', WHY[reason] ?? 'Gatehouse refuses to get it.') : null,
    mine ? p.open.form : null);
}

function drawList(p) {
  const g = p.groups ?? {};
  replace(p.listSlot,
    listGroup('Allowed', 'On this server\'s prompt allow-list: you can get them.', (g.allowed ?? []).map((x) => promptItem(p, x, 'allowed')), 'No prompts to get.'),
    listGroup('Hidden by the allow-list', 'The server offers these, but Gatehouse will not get them.', (g.hidden ?? []).map((w) => promptItem(p, w.item ?? {}, 'hidden', w.reason)), null),
    listGroup('Blocked by a pin change', 'Their definitions changed since they were pinned.', (g.blocked ?? []).map((w) => promptItem(p, w.item ?? {}, 'blocked', w.reason)), null));
}

function toggle(p, prompt) {
  if (p.open?.name === prompt.name) {
    p.open = null;
  } else {
    p.open = { name: prompt.name, definition: JSON.stringify(prompt), form: buildForm(p, prompt) };
  }
  drawList(p);
  p.open?.form.querySelector('input, button')?.focus();
}

async function approveName(p, name, shown, despite, button) {
  button.disabled = true;
  try {
    await api.promptsApprove(p.server, [name], despite ? 'high_findings' : 'not_given');
    notify(`Approved the prompt ${shown} for ${p.server}.`, { tone: 'good' });
  } catch (error) {
    notify(error);
    button.disabled = false;
    return;
  }
  await load(p);
}

function buildForm(p, prompt) {
  const args = (Array.isArray(prompt.arguments) ? prompt.arguments : []).filter((a) => typeof a?.name === 'string');
  const fields = args.map((arg) => completionField({
    name: arg.name,
    label: typeof arg.title === 'string' && arg.title !== '' ? arg.title : shownName(arg),
    required: arg.required === true,
    description: arg.description,
    complete: (value) => api.argumentComplete(p.server, { prompt: prompt.name }, arg.name, value, contextOf(fields, arg.name)),
  }));
  const get = el('button', { type: 'submit', class: 'primary', 'data-action': 'get-prompt' }, 'Get prompt');
  const close = el('button', { type: 'button', class: 'secondary', 'data-action': 'close-prompt' }, 'Close');
  const problems = el('p', { class: 'action-error', 'data-testid': 'prompt-form-error', 'aria-live': 'assertive' });
  const resultSlot = el('div', { class: 'result-slot', 'aria-live': 'polite' });
  const form = el('form', { id: 'server-prompt-form', class: 'tool-form', novalidate: true, 'data-prompt-form': prompt.name, 'aria-label': `Get ${shownName(prompt)}` },
    el('p', { class: 'form-title' }, 'Get ', el('code', {}, shownName(prompt)), ' from ', el('strong', {}, p.server)),
    fields.length === 0 ? el('p', { class: 'muted' }, 'This prompt takes no arguments.') : fields.map((f) => f.row),
    problems,
    el('div', { class: 'actions' }, get, close),
    resultSlot);
  close.addEventListener('click', () => {
    p.open = null;
    drawList(p);
  });
  let round = 0;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const values = Object.create(null);
    const missing = [];
    for (const [i, arg] of args.entries()) {
      const value = fields[i].input.value;
      if (value !== '') values[arg.name] = value;
      else if (arg.required === true) missing.push(shownName(arg));
      fields[i].input.setAttribute('aria-invalid', String(value === '' && arg.required === true));
    }
    if (missing.length > 0) {
      replace(problems, `Fill in ${missing.join(', ')}: required.`);
      return;
    }
    replace(problems);
    const mine = ++round;
    get.disabled = true;
    get.textContent = 'Getting…';
    replace(resultSlot, el('p', { class: 'muted', 'data-testid': 'prompt-pending' }, 'Getting the prompt. If the server asks you something, Gatehouse will show it.'));
    try {
      const view = await api.promptGet(p.server, prompt.name, values);
      if (mine === round) replace(resultSlot, renderPrompt(view));
    } catch (error) {
      if (mine === round) replace(resultSlot, renderError('prompt-view', { 'data-prompt': prompt.name }, 'The prompt was refused or failed', error));
    } finally {
      // Into view, unless it is not shown (the Prompts view took over for an elicitation).
      if (mine === round && resultSlot.isConnected && resultSlot.getClientRects().length > 0) {
        resultSlot.scrollIntoView({ block: 'nearest' });
      }
      get.disabled = false;
      get.textContent = 'Get prompt';
    }
  });
  return form;
}

function renderPrompt(view) {
  const messages = Array.isArray(view.messages) ? view.messages : [];
  const count = view.elicitations?.length ?? 0;
  return el('section', { class: 'result prompt-view', 'data-testid': 'prompt-view', 'data-is-error': 'false', 'data-prompt': view.prompt, 'aria-label': `Prompt ${view.prompt}` },
    el('p', { class: 'result-head' }, 'Prompt ', el('code', {}, view.prompt)),
    typeof view.description === 'string' && view.description !== ''
      ? el('p', { class: 'prompt-description', 'data-testid': 'prompt-description' }, view.description)
      : null,
    renderSender(view.sender),
    messages.length === 0 ? el('p', { class: 'muted' }, 'The server sent no messages.') : null,
    el('ol', { class: 'content-items' }, messages.map((message, index) =>
      el('li', { class: 'content-item', 'data-testid': 'prompt-message', 'data-index': String(index), 'data-role': String(message.role ?? ''), 'data-kind': shownKind(message.display) },
        el('p', { class: 'content-meta muted' },
          el('span', { class: 'tag', 'data-testid': 'message-role' }, String(message.role ?? '?')),
          typeof message.uri === 'string' ? [' ', el('code', { 'data-testid': 'content-uri' }, message.uri)] : null),
        renderDisplay(message.display, message.display?.mime ?? null)))),
    count > 0 ? el('p', { class: 'muted' }, `${count} elicitation${count === 1 ? '' : 's'} while getting this prompt (see Prompts).`) : null);
}
