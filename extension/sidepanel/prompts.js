// The host's questions to the person: confirmation cards (ui.confirm) and
// ask_user questions (ui.ask), with their countdowns.
//
// A card is something the person means to answer, never something a keypress
// meant elsewhere answers: a card never takes the keyboard focus (the person
// may be typing in the composer when it appears); the note above the composer
// and its Review button lead to it. Enter or Space approve only on a card the
// person moved the focus to; Escape denies. A lasting answer ("always allow
// this site") has its own buttons and is never what a key does.

import { byId as $, el } from '../lib/dom.js';
import { t } from '../lib/i18n.js';
import { app } from './app.js';
import { conversationTitle } from './conversations.js';
import { cardKey, flowText, pageTitle, requesterText } from './prompt-view.js';
import { prettyJSON } from './state.js';
import { askAnswer, formatCountdown, remainingFraction, remainingMs } from './view-model.js';

const prompts = new Map(); // call_id → {prompt, card, receivedAt}

/** The prompts the worker still holds (its hello after a (re)connect). */
export function syncPrompts(list) {
  const ids = new Set(list.map((p) => p.call_id));
  for (const id of [...prompts.keys()]) if (!ids.has(id)) removePrompt(id, 'gone');
  for (const p of list) if (!prompts.has(p.call_id)) showPrompt(p);
}

function answer(callId, value) {
  const entry = prompts.get(callId);
  if (!entry || !app.port) return;
  for (const b of entry.card.querySelectorAll('button, input, textarea')) b.disabled = true;
  app.port.post({ kind: 'answer', call_id: callId, answer: value });
}

export function showPrompt(prompt) {
  if (prompts.has(prompt.call_id)) return;
  const params = prompt.params ?? {};
  const card = prompt.method === 'ui.confirm' ? confirmCard(prompt, params) : askCard(prompt, params);
  // The host's timeout counts from when it asked; the worker noted when that was.
  const receivedAt = prompt.received_at ?? Date.now();
  prompts.set(prompt.call_id, { prompt, card, receivedAt });
  $('prompts').append(card);
  tick();
  renderWaiting();
}

/** The note above the composer while a question waits, so that nobody has to look for it. */
function renderWaiting() {
  $('prompt-waiting').hidden = prompts.size === 0;
}

/** Moves the focus to the oldest waiting card: the person asked for it (Review). */
export function reviewPrompt() {
  const first = prompts.values().next().value;
  if (!first) return;
  first.card.scrollIntoView({ block: 'nearest' });
  first.card.focus();
}

function countdown() {
  const bar = el('div', { className: 'countdown-bar' }, el('span'));
  const text = el('span', { className: 'countdown-text', role: 'timer' });
  return { node: el('div', { className: 'countdown' }, text, bar), bar, text };
}

/**
 * The lasting answers a request offers: their own buttons, never a key's doing.
 * ferry.ask's origin may be allowed or refused for good; a page script's origin
 * only allowed (not allowing is what the person's Deny already is).
 */
function lastingControls(prompt, lasting) {
  if (!lasting || typeof lasting.origin !== 'string') return null;
  let allowText;
  if (lasting.scope === 'page_ask') allowText = t('lastingAllowAsk', [lasting.origin]);
  else if (lasting.scope === 'page_scripts') allowText = t('lastingAllowScripts', [lasting.origin]);
  else return null;
  const always = el('button', { type: 'button', className: 'quiet small lasting-allow', text: allowText });
  always.addEventListener('click', () => answer(prompt.call_id, { approved: true, lasting: true }));
  const buttons = [always];
  if (lasting.scope === 'page_ask') {
    const never = el('button', { type: 'button', className: 'quiet small danger-text lasting-deny', text: t('lastingDenyAsk', [lasting.origin]) });
    never.addEventListener('click', () => answer(prompt.call_id, { approved: false, lasting: true }));
    buttons.unshift(never);
  }
  return el('div', { className: 'lasting' },
    el('p', { className: 'muted small', text: t('lastingHint') }),
    el('div', { className: 'row end' }, ...buttons));
}

function confirmCard(prompt, params) {
  const approve = el('button', { type: 'button', className: params.dangerous ? 'allow danger' : 'allow', text: t('approveButton') });
  const reject = el('button', { type: 'button', className: 'quiet deny', text: t('rejectButton') });
  const cd = countdown();
  const args = prettyJSON(params.arguments);
  const who = requesterText(params.requester, { conversationTitle }, t);
  const flow = flowText(params.flow, t);
  const title = pageTitle(params.page);
  const origin = params.origin || params.page?.url || '';
  const card = el('div', {
    className: `prompt confirm${params.dangerous ? ' dangerous' : ''}`, tabIndex: -1, role: 'alertdialog',
    ariaLabel: t('confirmTitle', [params.tool ?? '']),
  },
  el('h3', { text: t('confirmTitle', [params.tool ?? '']) }),
  who ? el('p', { className: 'requester', text: who }) : null,
  params.dangerous ? el('p', { className: 'error', text: t('dangerousWarning') }) : null,
  params.message ? el('p', { text: params.message }) : null,
  // A call on no page (a new tab, the workspace) has no page line.
  origin ? el('p', { className: 'small page-line', title: params.page?.url ?? '' },
    el('span', { className: 'muted', text: `${t('originLabel')} ` }), el('code', { text: origin }),
    title ? el('span', { className: 'muted', text: ` · ${title}` }) : null) : null,
  flow ? el('p', { className: 'flow', text: flow }) : null,
  lastingControls(prompt, params.lasting),
  args && args !== '{}' ? el('details', { open: true }, el('summary', { text: t('argumentsLabel') }), el('pre', {}, el('code', { text: args }))) : null,
  cd.node,
  el('p', { className: 'muted small', text: t('confirmKeysHint') }),
  el('div', { className: 'row end' }, reject, approve),
  el('p', { className: 'refused error small', role: 'alert' }));
  card.countdown = cd;
  card.timeoutMs = params.timeout_ms;
  approve.addEventListener('click', () => answer(prompt.call_id, { approved: true }));
  reject.addEventListener('click', () => answer(prompt.call_id, { approved: false }));
  // Armed once the focus is in the card: only the person puts it there (a click,
  // Tab, Review); this panel never moves the focus into a card by itself.
  let armed = false;
  card.addEventListener('focusin', () => {
    armed = true;
  });
  card.addEventListener('keydown', (e) => {
    const action = cardKey({ key: e.key, repeat: e.repeat, isComposing: e.isComposing, onCard: e.target === card }, armed);
    if (!action) return;
    e.preventDefault();
    answer(prompt.call_id, { approved: action === 'approve' });
  });
  return card;
}

function askCard(prompt, params) {
  const options = Array.isArray(params.options) ? params.options : [];
  const name = `ask-${prompt.call_id}`;
  const cd = countdown();
  const submit = el('button', { type: 'submit', text: t('answerButton') });
  const skip = el('button', { type: 'button', className: 'quiet', text: t('skipButton') });
  let field;
  let readSelected = () => [];
  if (options.length === 0) {
    field = el('textarea', { rows: 3, ariaLabel: params.question ?? '' });
    field.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
  } else {
    const type = params.multiple ? 'checkbox' : 'radio';
    const inputs = options.map((o, i) => {
      const id = `${name}-${i}`;
      const input = el('input', { type, name, id, value: o });
      return el('label', { className: 'choice', for: id }, input, ' ', el('span', { text: o }));
    });
    field = el('fieldset', {}, el('legend', { className: 'visually-hidden', text: params.question ?? '' }), ...inputs);
    readSelected = () => [...field.querySelectorAll('input:checked')].map((x) => x.value);
  }
  const form = el('form', { className: 'prompt ask', tabIndex: -1, role: 'dialog', ariaLabel: t('askTitle') },
    el('h3', { text: t('askTitle') }),
    el('p', { className: 'question', text: params.question ?? '' }),
    params.multiple ? el('p', { className: 'muted small', text: t('askMultipleHint') }) : null,
    field,
    cd.node,
    el('div', { className: 'row end' }, skip, submit),
    el('p', { className: 'refused error small', role: 'alert' }));
  form.countdown = cd;
  form.timeoutMs = params.timeout_ms;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    answer(prompt.call_id, askAnswer(params, { text: field.value, selected: readSelected() }));
  });
  skip.addEventListener('click', () => answer(prompt.call_id, { answer: null, reason: 'declined' }));
  form.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      answer(prompt.call_id, { answer: null, reason: 'declined' });
    }
  });
  // Review leads straight to what the person answers with.
  form.focus = () => (field.querySelector?.('input') ?? field).focus();
  return form;
}

export function removePrompt(callId, reason) {
  const entry = prompts.get(callId);
  if (!entry) return;
  prompts.delete(callId);
  const hadFocus = entry.card.contains(document.activeElement);
  if (reason === 'timeout' || reason === 'cancelled') {
    // Leave a short trace so the person knows why the card went away.
    const note = el('p', { className: 'notice warn', text: reason === 'timeout' ? t('promptTimedOut') : t('promptWithdrawn') });
    entry.card.replaceWith(note);
    setTimeout(() => note.remove(), 6000);
  } else {
    entry.card.remove();
  }
  renderWaiting();
  // Back to the composer, never on to the next card: a key pressed next must not
  // answer a card the person has not looked at.
  if (hadFocus) $('input').focus();
}

export function markPromptRefused(callId, reason) {
  const entry = prompts.get(callId);
  if (!entry) return;
  entry.card.querySelector('.refused').textContent = reason === 'expired' ? t('answerExpired') : t('answerInvalid');
  for (const b of entry.card.querySelectorAll('button, input, textarea')) b.disabled = reason === 'expired';
}

export function tick() {
  const now = Date.now();
  for (const { card, receivedAt } of prompts.values()) {
    const left = remainingMs(receivedAt, card.timeoutMs, now);
    if (left === null) continue;
    card.countdown.text.textContent = t('countdownLeft', [formatCountdown(left)]);
    card.countdown.bar.firstChild.style.width = `${Math.round(remainingFraction(receivedAt, card.timeoutMs, now) * 100)}%`;
  }
}
