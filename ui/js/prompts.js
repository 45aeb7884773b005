// Elicitation prompts: one card per prompt, the oldest asking one in the modal
// dialog#prompt-dialog, the others in the Prompts view. All state lives in Rust; this module
// only mirrors prompts_list and sends the user's explicit choices back.
import * as api from './api.js';
import { el, append, replace, flag, focusables } from './dom.js';
import { renderBanner } from './identity.js';
import { buildPromptForm } from './promptform.js';
import { notify } from './notice.js';
import { coalesce, formatTime, hostIndex } from './util.js';

const HOLD = 'hold_for_elicitation_evidence';
const ALLOW = 'allow_elicitation_with_receipt';
// The desk lets these go; an answered form card has nothing left to do either.
const FINISHED = new Set(['completed', 'refused', 'closed', 'answered']);
const STATE_LABEL = {
  asking: 'Needs your answer',
  refused: 'Refused',
  waiting: 'Waiting',
  answered: 'Answered',
  completed: 'Completed',
  closed: 'Closed',
};
const STATE_TONE = { asking: 'warn', refused: 'bad', waiting: 'busy', answered: 'idle', completed: 'good', closed: 'idle' };
// URL reason codes with a dedicated explanation; any other url_* code is shown with its detail.
const URL_WARNING_TITLE = {
  url_punycode_host: 'Punycode host',
  url_mixed_script_host: 'Host mixes writing systems',
  url_confusable_host: 'Host looks like another one',
  url_userinfo: 'User name in the URL',
  url_ip_literal: 'IP address instead of a name',
  url_obfuscated_host: 'Disguised host',
};

let cards = [];
let listRoot = null;
let countBadge = null;
let dialog = null;
let dialogBody = null;
let asked = null; // {id, view, problems}
let closingOnPurpose = false;
let lastListKey = '';
const seenAsking = new Set();
let onNewAsking = () => {};

// An AI client as the host knows it: the id it was set up with (not verified: any local
// program can claim one), its transport and the name it gave itself. Text nodes only.
function clientWords(caller, testid) {
  return [el('strong', { 'data-testid': testid }, caller?.client ?? ''),
    ` over ${caller?.transport ?? ''}`,
    caller?.claimed ? el('span', { class: 'muted' }, ` (it says it is ${caller.claimed})`) : ''];
}

// `a`, `a and b`, `a, b and c`.
function listed(items) {
  return items.flatMap((item, i) => [i === 0 ? '' : i === items.length - 1 ? ' and ' : ', ', item]);
}

// Which AI client's call through the gateway caused the prompt (`prompt.attribution`). The
// host names a client only when the elicitation is tied to that client's call alone; when
// several were running it cannot tell, and the card says so rather than name one of them.
function attributionLine(attribution) {
  if (attribution?.kind === 'client') {
    return el('p', { class: 'caller', 'data-attribution': 'client' }, 'During a call from the AI client ',
      clientWords(attribution.caller, 'caller'));
  }
  if (attribution?.kind === 'unknown') {
    const who = (attribution.clients ?? []).map((caller) =>
      el('span', { 'data-testid': 'caller-candidate' }, clientWords(caller, 'caller-candidate-client')));
    if (attribution.more_clients > 0) who.push(`${attribution.more_clients} more AI clients`);
    if (attribution.gatehouse) {
      who.push(el('span', { 'data-testid': 'caller-gatehouse' }, 'Gatehouse itself (not for an AI client)'));
    }
    return el('p', { class: 'caller', 'data-attribution': 'unknown' }, 'Asked while requests from ',
      listed(who), ' were running; ',
      el('strong', {}, 'Gatehouse cannot tell which one caused it.'));
  }
  return null;
}

/** Sets up the view and the dialog; `whenAsking` is called when a new card needs an answer. */
export function init({ whenAsking }) {
  listRoot = document.getElementById('prompt-list');
  countBadge = document.querySelector('[data-testid=prompt-count]');
  dialog = document.getElementById('prompt-dialog');
  dialogBody = document.getElementById('prompt-dialog-body');
  onNewAsking = whenAsking;

  // Esc and any other way of closing the dialog answer "cancel"; it is never just dismissed.
  dialog.addEventListener('cancel', (event) => {
    event.preventDefault();
    if (asked) asked.view.act('cancel');
  });
  dialog.addEventListener('close', () => {
    if (!closingOnPurpose && asked) {
      const view = asked.view;
      dialog.showModal();
      view.act('cancel');
    }
    closingOnPurpose = false;
  });
  dialog.addEventListener('keydown', onDialogKey);
}

export const refresh = coalesce(async () => {
  try {
    cards = await api.promptsList();
  } catch (error) {
    notify(error);
    return;
  }
  const asking = cards.filter((c) => c.state === 'asking');
  // Pending = waiting for the user: an answer, or Retry/Cancel after a URL was opened.
  const pending = cards.filter((c) => c.state === 'asking' || c.state === 'waiting').length;
  countBadge.textContent = String(pending);
  flag(countBadge, 'data-zero', pending === 0);
  const fresh = asking.filter((c) => !seenAsking.has(c.prompt.id));
  for (const c of asking) seenAsking.add(c.prompt.id);
  syncDialog(asking);
  renderList();
  if (fresh.length > 0) onNewAsking();
});

function syncDialog(asking) {
  if (asked) {
    const still = asking.find((c) => c.prompt.id === asked.id);
    if (still) {
      const problems = JSON.stringify(still.problems ?? []);
      if (problems !== asked.problems) {
        asked.problems = problems;
        asked.view.showProblems(still.problems ?? []);
      }
      return;
    }
    closeDialog();
  }
  const next = asking[0];
  if (!next) return;
  const view = renderCard(next, 'dialog');
  asked = { id: next.prompt.id, view, problems: JSON.stringify(next.problems ?? []) };
  replace(dialogBody, view.element);
  dialog.setAttribute('aria-label', `Request from ${next.prompt.server}`);
  if (!dialog.open) dialog.showModal();
  view.focusFirst();
}

function closeDialog() {
  asked = null;
  if (dialog.open) {
    closingOnPurpose = true;
    dialog.close();
  }
  dialogBody.replaceChildren();
}

function renderList() {
  const shown = cards.filter((c) => c.prompt.id !== asked?.id).reverse();
  // Re-rendering an unchanged list would only lose focus and scroll position.
  const key = JSON.stringify([asked?.id ?? null, shown]);
  if (key === lastListKey) return;
  lastListKey = key;
  const current = asked
    ? el('p', { class: 'note' }, 'One request is open in the Gatehouse dialog now.')
    : null;
  if (shown.length === 0) {
    replace(listRoot, current ?? el('p', { class: 'empty' },
      'No prompts. When a server asks you for something, Gatehouse shows it here and in a dialog that only Gatehouse draws.'));
    return;
  }
  replace(listRoot, current, shown.map((c) => renderCard(c, c.state === 'asking' ? 'queued' : 'list').element));
}

// The dialog keyboard: Enter submits a valid form (never from a textarea or another button);
// Tab and Shift+Tab stay inside the dialog.
function onDialogKey(event) {
  if (!asked) return;
  // WebKitGTK may report Shift+Tab (ISO_Left_Tab) with key "Unidentified"; code is reliable.
  if (event.key === 'Tab' || event.code === 'Tab') {
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
    return;
  }
  if (event.key !== 'Enter' || event.isComposing || event.shiftKey || event.altKey || event.ctrlKey || event.metaKey) return;
  if (event.target.closest('textarea, button, a, summary')) return;
  event.preventDefault();
  asked.view.enter();
}

function cardTitle(prompt) {
  switch (prompt.body.mode) {
    case 'url': return 'asks you to open a web page';
    case 'form': return 'asks you for information';
    default: return 'sent a form Gatehouse cannot show';
  }
}

function reasonsBlock(assessment) {
  if (!assessment) return null;
  const reasons = assessment.reasons ?? [];
  if (assessment.decision === ALLOW && reasons.length === 0) return null;
  return el('div', { class: `decision decision-${assessment.decision === HOLD ? 'hold' : assessment.decision === ALLOW ? 'allow' : 'deny'}` },
    el('p', { class: 'decision-head' }, 'Policy decision: ', el('code', { 'data-testid': 'decision' }, assessment.decision)),
    reasons.length > 0
      ? el('ul', { class: 'reasons' }, reasons.map((r) =>
        el('li', { 'data-testid': 'reason', 'data-code': r.code },
          el('code', { class: 'reason-code' }, r.code), el('span', { class: 'reason-detail' }, r.detail))))
      : null);
}

function urlBlock(prompt) {
  const { full = '', host = '', host_unicode: hostUnicode = '' } = prompt.body.display ?? {};
  const at = hostIndex(full, host);
  const fullBox = at >= 0
    ? el('pre', { class: 'url-full', 'data-testid': 'url-full' },
      full.slice(0, at), el('mark', { class: 'url-host', 'data-testid': 'url-host' }, host), full.slice(at + host.length))
    : el('pre', { class: 'url-full', 'data-testid': 'url-full' }, full);
  const warnings = (prompt.assessment?.reasons ?? []).filter((r) => r.code.startsWith('url_'));
  return el('div', { class: 'url-card' },
    el('p', { class: 'url-label' }, 'Exactly what will be opened, in your system browser:'),
    fullBox,
    el('dl', { class: 'fields url-hosts' },
      el('div', { class: 'field-row' }, el('dt', {}, 'Host'),
        el('dd', { class: 'mono' }, at >= 0 ? host : el('span', { 'data-testid': 'url-host' }, host))),
      hostUnicode && hostUnicode !== host
        ? el('div', { class: 'field-row' }, el('dt', {}, 'Displayed as'),
          el('dd', { class: 'mono' }, el('span', { 'data-testid': 'url-host-unicode' }, hostUnicode)))
        : null),
    hostUnicode && hostUnicode !== host
      ? el('p', { class: 'url-note' }, 'This host is internationalized: it can be displayed as “', hostUnicode,
        '” but the browser goes to “', host, '”. Check it is the site you expect.')
      : null,
    warnings.length > 0
      ? el('ul', { class: 'url-warnings' }, warnings.map((r) =>
        el('li', { class: 'url-warning', 'data-testid': 'url-warning', 'data-code': r.code },
          el('span', { class: 'warning-mark', 'aria-hidden': 'true' }, '⚠'),
          el('span', {},
            el('strong', {}, URL_WARNING_TITLE[r.code] ?? r.code), ' ', r.detail))))
      : null);
}

function fieldSummary(body) {
  const fields = body.schema?.fields ?? [];
  const checks = new Map((body.fields ?? []).map((f) => [f.name, f]));
  if (fields.length === 0) return null;
  return el('div', { class: 'asked-fields' },
    el('p', { class: 'muted' }, 'It asked for:'),
    el('ul', {}, fields.map((f) => {
      const check = checks.get(f.name);
      return el('li', {},
        f.title ?? f.name, ' ', el('code', { class: 'muted' }, f.name),
        check?.sensitive ? [' ', el('span', { class: 'tag tag-sensitive' }, 'sensitive'), check.matched ? el('span', { class: 'muted' }, ` (matched “${check.matched}”)`) : null] : null);
    })));
}

function stateBlock(card) {
  const refusedNote = card.prompt.body.mode === 'url'
    ? 'Gatehouse refused this request. Nothing was opened; the server was only told “decline”.'
    : 'Gatehouse refused this request. Nothing was sent to the server but a “decline”.';
  switch (card.state) {
    case 'refused':
      return el('p', { class: 'state-note tone-bad' }, refusedNote);
    case 'waiting':
      if (card.phase === 'retry') return el('p', { class: 'state-note tone-busy' }, 'Finish in your browser, then Retry.');
      return el('p', { class: 'state-note tone-busy' }, el('span', { class: 'spinner', 'aria-hidden': 'true' }),
        card.phase === 'in_call'
          ? 'Waiting for completion… The tool call goes on when the server hears back; Cancel stops it.'
          : 'Waiting for completion…');
    case 'answered':
      return el('p', { class: 'state-note' }, 'Answered. The tool call that asked goes on.');
    case 'completed':
      return el('p', { class: 'state-note tone-good' }, 'Completed', card.completedVia ? [' (', card.completedVia, ')'] : null, '.');
    case 'closed':
      return el('p', { class: 'state-note' }, 'Closed', card.outcome ? [': ', card.outcome] : '.');
    default:
      return null;
  }
}

function resultBlock(result) {
  if (!result) return null;
  return el('div', { class: 'result', 'data-testid': 'prompt-result', 'data-is-error': String(Boolean(result.isError)) },
    el('p', { class: 'result-head' }, result.isError ? 'The call that asked ended with an error' : 'Result of the call that asked'),
    el('pre', { class: 'result-text' }, result.text ?? ''));
}

function button(action, label, kind = 'secondary') {
  return el('button', { type: 'button', class: kind, 'data-action': action }, label);
}

/**
 * One card. `where` is `dialog` (the prompt being asked: form and answer buttons), `queued`
 * (asking, after the current one) or `list`. Returns the element and what the dialog needs.
 */
function renderCard(card, where) {
  const { prompt } = card;
  const id = prompt.id;
  const mode = prompt.body.mode;
  const held = prompt.assessment?.decision === HOLD;
  const interactive = where === 'dialog';
  const canOverride = interactive && held && prompt.assessment.override_allowed === true;
  let form = null;
  let busy = false;

  const actions = el('div', { class: 'actions' });
  const status = el('p', { class: 'action-error', 'aria-live': 'assertive' });
  // Submit and Override wait for a valid form; nothing is clickable while an answer is on its way.
  const syncButtons = () => {
    for (const b of actions.querySelectorAll('button')) {
      const needsValid = b.dataset.action === 'submit' || b.dataset.action === 'override';
      b.disabled = busy || (needsValid && form !== null && !form.isValid());
    }
  };

  let body = null;
  if (mode === 'form' && interactive) {
    form = buildPromptForm(id, prompt.body, { problems: card.problems ?? [], onValidity: syncButtons });
    body = form.element;
  } else if (mode === 'form') {
    body = fieldSummary(prompt.body);
  } else if (mode === 'unsupported') {
    body = el('div', { class: 'unsupported' },
      el('p', {}, 'This form is outside what MCP allows, so Gatehouse will not show half of it:'),
      el('p', { class: 'mono' }, prompt.body.detail ?? ''));
  }

  const element = el('article', {
    class: `prompt-card state-${card.state}`, tabindex: '-1',
    'data-prompt-id': id, 'data-state': card.state, 'data-mode': mode, 'data-decision': prompt.assessment?.decision,
  },
  // In the dialog only this part scrolls, so the answer buttons below it stay in view.
  el('div', { class: 'card-scroll' },
  el('header', { class: 'card-head' },
    el('h3', { class: 'card-title' }, el('span', { class: 'server-name' }, prompt.server), ' ', cardTitle(prompt)),
    el('span', { class: `badge tone-${STATE_TONE[card.state] ?? 'idle'}`, 'data-testid': 'prompt-state' }, STATE_LABEL[card.state] ?? card.state)),
  el('p', { class: 'card-meta muted' },
    `#${id} · asked ${formatTime(card.askedAt)}`, prompt.era ? ` · protocol ${prompt.era}` : '',
    ' · receipt ', el('code', {}, prompt.receipt_id ?? '')),
  renderBanner(prompt.banner, 'banner'),
  el('div', { class: 'said' },
    el('p', { class: 'said-label' }, 'The server says, in its own words:'),
    el('p', { class: 'message', 'data-testid': 'message' }, prompt.message ?? '')),
  el('p', { class: 'origin muted' }, 'Caused by: ', el('code', { 'data-testid': 'origin' }, prompt.origin ?? '')),
  attributionLine(prompt.attribution),
  mode === 'url' ? urlBlock(prompt) : null,
  reasonsBlock(prompt.assessment),
  held && card.state === 'asking'
    ? el('p', { class: 'hold-note' }, prompt.assessment.override_allowed
      ? 'The policy holds this request because evidence is missing (see above). Submitting or opening alone will be refused; you may override the hold explicitly, and the override is recorded.'
      : 'The policy holds this request because evidence is missing (see above).')
    : null,
  body,
  where === 'queued' ? el('p', { class: 'state-note tone-warn' }, 'Queued: Gatehouse asks you about this after the current request.') : null,
  stateBlock(card),
  resultBlock(card.result)),
  status,
  actions);

  async function run(call) {
    if (busy) return;
    busy = true;
    syncButtons();
    replace(status);
    try {
      await call();
    } catch (error) {
      replace(status, el('code', {}, error.code ?? 'error'), ' ', error.message ?? '');
      notify(error);
    } finally {
      busy = false;
      syncButtons();
      refresh();
    }
  }

  const answer = (reply, { overrideHold = false } = {}) => run(async () => {
    const body = { reply };
    if (reply === 'submit') {
      if (!(await form.validateNow())) {
        form.revealErrors();
        return;
      }
      body.content = form.content();
    }
    if (overrideHold) body.overrideHold = true;
    await api.promptAnswer(id, body);
  });

  function act(action) {
    switch (action) {
      case 'submit': return answer('submit');
      case 'open': return answer('open');
      case 'override': return answer(mode === 'url' ? 'open' : 'submit', { overrideHold: true });
      case 'decline': return answer('decline');
      case 'cancel': return answer('cancel');
      case 'retry': return run(() => api.promptWaitChoice(id, 'retry'));
      case 'wait-cancel': return run(() => api.promptWaitChoice(id, 'cancel'));
      case 'dismiss': return run(() => api.promptDismiss(id));
      default: return undefined;
    }
  }

  if (interactive) {
    append(actions,
      // On a held prompt the plain answer is not the one to lead with: it will be refused.
      mode === 'form' ? button('submit', 'Submit', held ? 'secondary' : 'primary') : null,
      mode === 'url' ? button('open', 'Open in browser', held ? 'secondary' : 'primary') : null,
      canOverride && mode !== 'unsupported'
        ? button('override', mode === 'url' ? 'Override and open' : 'Override and continue', 'danger')
        : null,
      button('decline', 'Decline'),
      button('cancel', 'Cancel'));
  } else if (card.state === 'waiting') {
    // A call still running has nothing to retry: it goes on by itself, or is cancelled.
    append(actions, card.phase === 'in_call' ? null : button('retry', 'Retry', 'primary'), button('wait-cancel', 'Cancel'));
  } else if (FINISHED.has(card.state)) {
    append(actions, button('dismiss', 'Dismiss'));
  }
  syncButtons();
  actions.addEventListener('click', (event) => {
    const target = event.target.closest('button[data-action]');
    if (target && !target.disabled) act(target.dataset.action);
  });

  return {
    element,
    act,
    enter() {
      // Submit validates afresh (the button's state may be a keystroke old) and sends only a
      // valid form. On a held prompt a plain Submit is refused; Enter must not be how that happens.
      if (form && !held) act('submit');
    },
    showProblems: (problems) => form?.showProblems(problems),
    focusFirst() {
      // A URL card focuses the card itself, never a button: one stray Enter must not open it.
      (form?.firstField() ?? element).focus();
    },
  };
}
