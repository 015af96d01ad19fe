// The side panel: chat with the agent, the run's tool calls, confirmations and
// questions, the task list, conversations and diagnostics. Logic lives in
// state.js, markdown.js and view-model.js; this file only draws and wires.
// Host, model and page text is placed with textContent / createTextNode only.

import { PANEL_PORT } from '../background/ui.js';
import {
  connectRuntime, onTabActivated, onTabUpdated, openOptionsPage, runtimeId, sendRuntimeMessage, tabsGet, tabsQuery,
} from '../lib/chrome-api.js';
import { deserializeError } from '../lib/host-errors.js';
import { localize, t } from '../lib/i18n.js';
import { displayState, helpSteps, statusLabel } from '../options/status-view.js';
import { renderMarkdown } from './render-markdown.js';
import {
  addUserMessage, applyEvent, catchUp, emptyConversation, flush, fromHistory, isTerminal, prettyJSON, resultLabel, runStarted,
} from './state.js';
import {
  askAnswer, diagnosticsRun, formatCountdown, remainingFraction, remainingMs, sortConversations, tabOrigin, toJSON, upsertConversation,
} from './view-model.js';

const $ = (id) => document.getElementById(id);

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') node.textContent = v;
    else if (k === 'className') node.className = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k.startsWith('aria') || k === 'role' || k === 'for') node.setAttribute(k === 'for' ? 'for' : k.replace(/^aria([A-Z])/, (_, c) => `aria-${c.toLowerCase()}`), v);
    else node[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) node.append(c);
  return node;
}

async function hostRequest(method, params, timeout) {
  const reply = await sendRuntimeMessage({ type: 'host.request', method, params, timeout });
  if (!reply?.ok) throw deserializeError(reply?.error);
  return reply.result;
}

// ---------------------------------------------------------------- state

let view = emptyConversation();
let conversations = [];
let hostConnected = false;
let boundTab = null; // {id, title, url}
let port = null;
const prompts = new Map(); // call_id → {prompt, card, shownAt}
const rendered = new Map(); // item id → {item, node}
let localIds = 0;
let sending = false;

function setView(next) {
  view = next;
  renderChat();
}

// ---------------------------------------------------------------- host status

function renderStatus(snapshot) {
  const shown = displayState(snapshot);
  $('host-status').dataset.state = shown;
  $('host-status-text').textContent = statusLabel(shown, t);
  const steps = helpSteps(snapshot, runtimeId(), t);
  const parts = [];
  for (const step of steps) {
    parts.push(el('p', { text: step.text }));
    if (step.command) parts.push(el('pre', {}, el('code', { text: step.command })));
    if (step.detail) parts.push(el('p', { className: 'detail', text: step.detail }));
  }
  $('host-help-steps').replaceChildren(...parts);
  $('host-help').hidden = parts.length === 0;
  const was = hostConnected;
  hostConnected = shown === 'connected';
  updateComposer();
  if (hostConnected && !was) onConnected();
}

function onConnected() {
  loadConversations();
  refreshPageActions();
  if (view.conversation?.id) openConversation(view.conversation.id);
}

// ---------------------------------------------------------------- the panel port

function connectPanel() {
  port = connectRuntime(PANEL_PORT);
  port.onMessage(onPanelMessage);
  port.onDisconnect(() => {
    port = null;
    // The service worker restarted: reconnect; it sends pending prompts again.
    setTimeout(connectPanel, 500);
  });
}

function onPanelMessage(message) {
  switch (message?.kind) {
    case 'hello':
      renderStatus(message.status);
      syncPrompts(message.prompts ?? []);
      break;
    case 'status':
      renderStatus(message.status);
      break;
    case 'event':
      onEvent(message.event);
      break;
    case 'tasks':
      if (message.conversation_id && message.conversation_id === view.conversation?.id) {
        setView({ ...view, tasks: message.tasks ?? [] });
      }
      break;
    case 'prompt':
      showPrompt(message.prompt);
      break;
    case 'prompt_closed':
      removePrompt(message.call_id, message.reason);
      break;
    case 'answer_refused':
      markPromptRefused(message.call_id, message.reason);
      break;
    case 'replay':
      replayWaiters.get(message.run_id)?.(message.events ?? []);
      replayWaiters.delete(message.run_id);
      break;
    default:
      break;
  }
}

const replayWaiters = new Map();

function requestReplay(runId) {
  return new Promise((resolve) => {
    if (!port) {
      resolve([]);
      return;
    }
    replayWaiters.set(runId, resolve);
    port.post({ kind: 'replay', run_id: runId });
    setTimeout(() => {
      if (replayWaiters.get(runId) === resolve) {
        replayWaiters.delete(runId);
        resolve([]);
      }
    }, 3000);
  });
}

// Events of the run a chat.send is starting can arrive before its answer.
let earlyEvents = [];

function onEvent(event) {
  if (!event) return;
  if (sending && event.conversation_id !== view.conversation?.id) {
    earlyEvents.push(event);
    return;
  }
  if (!view.conversation?.id || event.conversation_id !== view.conversation.id) {
    // Another conversation moved: keep the list's order fresh.
    if (isTerminal(event) || event.type === 'run_started') loadConversations();
    // A run started elsewhere for the tab this panel is bound to (a page's
    // ferry.ask): show it, unless this panel is busy with a run of its own.
    if (event.type === 'run_started' && boundTab && !view.activeRunId && !sending) followTabRun(event.conversation_id);
    return;
  }
  let next = applyEvent(view, event);
  if (isTerminal(event)) {
    next = flush(next);
    loadConversations();
    if (next.runs[event.run_id]?.gap) {
      // Some events were missed: the stored conversation is the truth.
      setView(next);
      openConversation(view.conversation.id);
      return;
    }
  }
  setView(next);
}

async function followTabRun(id) {
  try {
    const got = await hostRequest('conversations.get', { conversation_id: id });
    if (got.conversation?.tab_id === boundTab?.id && !view.activeRunId && !sending) openConversation(id);
  } catch {
    // Gone already: nothing to show.
  }
}

// ---------------------------------------------------------------- conversations

async function loadConversations() {
  if (!hostConnected) return;
  try {
    const got = await hostRequest('conversations.list', { limit: 100 });
    conversations = sortConversations(got.conversations ?? []);
    renderConversations();
  } catch (err) {
    console.error('ferry: conversations.list', err);
  }
}

function renderConversations() {
  const list = $('conversation-list');
  $('conversations-empty').hidden = conversations.length > 0;
  list.replaceChildren(...conversations.map((c) => {
    const current = c.id === view.conversation?.id;
    const open = el('button', {
      type: 'button', className: 'link conv-open', text: c.title || t('untitledConversation'),
      ariaCurrent: current ? 'true' : undefined,
    });
    open.addEventListener('click', () => {
      openConversation(c.id);
      toggleDrawer('conversations', false);
    });
    const when = el('span', { className: 'muted small', text: formatTime(c.updated_at) });
    const rename = el('button', { type: 'button', className: 'quiet small', text: t('renameButton'), ariaLabel: t('renameConversationLabel', [c.title || '']) });
    rename.addEventListener('click', () => startRename(c, li));
    const del = el('button', { type: 'button', className: 'quiet small danger-text', text: t('deleteButton'), ariaLabel: t('deleteConversationLabel', [c.title || '']) });
    del.addEventListener('click', () => deleteConversation(c));
    const li = el('li', { className: current ? 'current' : '' }, open, when, el('span', { className: 'conv-actions' }, rename, del));
    return li;
  }));
}

function startRename(c, li) {
  const input = el('input', { type: 'text', value: c.title || '', ariaLabel: t('renameConversationLabel', [c.title || '']) });
  const save = el('button', { type: 'button', className: 'small', text: t('saveButton') });
  const cancel = el('button', { type: 'button', className: 'quiet small', text: t('cancelButton') });
  const form = el('span', { className: 'rename' }, input, save, cancel);
  li.replaceChildren(form);
  input.focus();
  input.select();
  const done = async (ok) => {
    const title = input.value.trim();
    if (ok && title && title !== c.title) {
      try {
        const got = await hostRequest('conversations.rename', { conversation_id: c.id, title });
        conversations = upsertConversation(conversations, got.conversation);
        if (view.conversation?.id === c.id) view = { ...view, conversation: got.conversation };
      } catch (err) {
        showError(t('renameFailed', [err.message]));
      }
    }
    renderConversations();
  };
  save.addEventListener('click', () => done(true));
  cancel.addEventListener('click', () => done(false));
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      done(true);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      done(false);
    }
  });
}

async function deleteConversation(c) {
  // The browser's own dialog: plain text, keyboard reachable.
  if (!globalThis.confirm(t('deleteConversationConfirm', [c.title || t('untitledConversation')]))) return;
  try {
    await hostRequest('conversations.delete', { conversation_id: c.id });
    conversations = conversations.filter((x) => x.id !== c.id);
    if (view.conversation?.id === c.id) newConversation();
    renderConversations();
  } catch (err) {
    showError(t('deleteFailed', [err.message]));
  }
}

function newConversation() {
  rendered.clear();
  $('messages').replaceChildren();
  setView(emptyConversation());
  renderConversations();
  renderDiagnosticsRuns();
  $('input').focus();
}

async function openConversation(id) {
  try {
    const got = await hostRequest('conversations.get', { conversation_id: id });
    const replayed = got.active_run_id ? await requestReplay(got.active_run_id) : [];
    rendered.clear();
    $('messages').replaceChildren();
    setView(got.active_run_id ? catchUp(got, replayed) : fromHistory(got));
    renderConversations();
    renderDiagnosticsRuns();
  } catch (err) {
    showError(t('openConversationFailed', [err.message]));
  }
}

// ---------------------------------------------------------------- the bound tab

async function refreshBoundTab(tabId) {
  try {
    const tab = tabId !== undefined ? await tabsGet(tabId) : (await tabsQuery({ active: true, currentWindow: true }))[0];
    boundTab = tab ? { id: tab.id, windowId: tab.windowId, title: tab.title ?? '', url: tab.url ?? '' } : null;
  } catch {
    boundTab = null;
  }
  renderBinding();
  refreshPageActions();
}

function renderBinding() {
  const conv = view.conversation;
  // A conversation stays bound to the tab it was started in until a new message rebinds it.
  const origin = boundTab ? tabOrigin(boundTab.url) : conv?.origin ?? '';
  $('bound-tab-title').textContent = boundTab?.title || (boundTab ? t('untitledTab') : t('noTab'));
  $('bound-origin').textContent = origin || t('noOrigin');
  $('bound-tab-title').title = boundTab?.url ?? '';
}

let pageActionsGeneration = 0;
async function refreshPageActions() {
  const generation = ++pageActionsGeneration;
  if (!hostConnected || !boundTab) {
    $('page-actions').textContent = '';
    return;
  }
  try {
    const got = await hostRequest('tools.list', { tab_id: boundTab.id });
    if (generation !== pageActionsGeneration) return;
    const page = (got.tools ?? []).filter((x) => x.source === 'page');
    const held = (got.unavailable ?? []).length;
    $('page-actions').textContent = page.length > 0 ? t('pageActionsCount', [String(page.length)]) : t('pageActionsNone');
    $('page-actions').title = [...page.map((x) => x.name), ...(held ? [t('unavailableCount', [String(held)])] : [])].join('\n');
  } catch {
    if (generation === pageActionsGeneration) $('page-actions').textContent = '';
  }
}

// ---------------------------------------------------------------- chat

function renderChat() {
  const list = $('messages');
  $('chat-empty').hidden = view.items.length > 0;
  const keep = new Set();
  let before = null;
  // Walk backwards so each node is inserted before its successor.
  for (let i = view.items.length - 1; i >= 0; i--) {
    const item = view.items[i];
    keep.add(item.id);
    let entry = rendered.get(item.id);
    if (!entry || entry.item !== item) {
      const node = renderItem(item, entry?.node);
      if (entry?.node && entry.node !== node) entry.node.replaceWith(node);
      entry = { item, node };
      rendered.set(item.id, entry);
    }
    if (entry.node.parentNode !== list || entry.node.nextSibling !== before) list.insertBefore(entry.node, before);
    before = entry.node;
  }
  for (const [id, entry] of rendered) {
    if (!keep.has(id)) {
      entry.node.remove();
      rendered.delete(id);
    }
  }
  renderTasks();
  renderBinding();
  updateComposer();
  const main = $('chat');
  if (main.scrollHeight - main.scrollTop - main.clientHeight < 120) main.scrollTop = main.scrollHeight;
}

function renderItem(item, old) {
  switch (item.kind) {
    case 'user':
      return el('li', { className: 'msg user' }, el('div', { className: 'bubble', text: item.text }));
    case 'assistant': {
      const body = el('div', { className: 'bubble markdown' });
      body.append(renderMarkdown(document, item.text));
      return el('li', { className: `msg assistant${item.streaming ? ' streaming' : ''}`, ariaBusy: item.streaming ? 'true' : undefined }, body);
    }
    case 'tool':
      return renderTool(item, old);
    case 'notice':
      return el('li', { className: `notice ${item.level}`, text: noticeText(item) });
    default:
      return el('li');
  }
}

function renderTool(item, old) {
  const label = resultLabel(item);
  const status = el('span', { className: `badge ${item.status}`, text: statusText(label) });
  const summary = el('summary', {},
    el('span', { className: 'tool-name', text: item.name || '?' }), ' ', status,
    item.durationMs !== null && item.durationMs !== undefined ? el('span', { className: 'muted small', text: ` ${t('durationMs', [String(item.durationMs)])}` }) : null,
    item.waiting ? el('span', { className: 'muted small', text: ` ${item.waiting === 'confirm' ? t('waitingConfirm') : t('waitingAnswer')}` }) : null);
  const parts = [summary];
  const args = prettyJSON(item.arguments);
  if (args && args !== '{}') parts.push(el('h4', { text: t('argumentsLabel') }), el('pre', {}, el('code', { text: args })));
  if (item.result) {
    if (item.result.success === false) {
      parts.push(el('p', { className: 'error' }, el('code', { text: item.result.code ?? '' }), ' ', el('span', { text: item.result.reason ?? '' })));
    } else if (item.result.result !== undefined) {
      parts.push(el('h4', { text: t('resultLabel') }), el('pre', {}, el('code', { text: prettyJSON(item.result.result) })));
    }
    if (item.result.expect !== undefined) parts.push(el('h4', { text: t('expectLabel') }), el('pre', {}, el('code', { text: prettyJSON(item.result.expect) })));
    if (item.result.changed !== undefined) parts.push(el('h4', { text: t('changedLabel') }), el('pre', {}, el('code', { text: prettyJSON(item.result.changed) })));
  }
  if (item.sub) {
    const subList = el('ol', { className: 'sub-items' });
    for (const sub of item.sub.items) subList.append(renderItem(sub));
    const title = [item.sub.agentType, item.sub.description].filter(Boolean).join(' · ');
    parts.push(el('details', { className: 'sub-agent', open: true }, el('summary', { text: t('subAgentLabel', [title]) }), subList));
  }
  // Keep a card open if the person opened it.
  const details = el('details', { className: 'tool', open: old?.querySelector?.(':scope > details')?.open ?? false }, ...parts);
  return el('li', { className: `msg tool-card ${item.status}`, dataset: { callId: item.id } }, details);
}

function noticeText(item) {
  const [detail = ''] = item.args ?? [];
  switch (item.key) {
    case 'noticeCompacted': return t('noticeCompacted');
    case 'noticeLoopPaused': return t('noticeLoopPaused', [detail]);
    case 'noticeRunCancelled': return t('noticeRunCancelled');
    default: return t('noticeRunFailed', [detail]);
  }
}

function statusText(label) {
  switch (label) {
    case 'running': return t('toolRunning');
    case 'ok': return t('toolOk');
    case 'interrupted': return t('toolInterrupted');
    default: return label;
  }
}

function renderTasks() {
  const tasks = view.tasks ?? [];
  $('tasks').hidden = tasks.length === 0;
  const done = tasks.filter((x) => x.status === 'completed').length;
  $('tasks-count').textContent = t('tasksCount', [String(done), String(tasks.length)]);
  $('task-list').replaceChildren(...tasks.map((task) =>
    el('li', { className: `task ${task.status}` },
      el('span', { className: 'task-status', text: taskStatus(task.status) }), ' ',
      el('span', { text: task.subject ?? '' }),
      task.description ? el('div', { className: 'muted small', text: task.description }) : null)));
}

function taskStatus(status) {
  switch (status) {
    case 'completed': return t('taskCompleted');
    case 'in_progress': return t('taskInProgress');
    default: return t('taskPending');
  }
}

function updateComposer() {
  const running = Boolean(view.activeRunId);
  $('stop').hidden = !running;
  $('send').disabled = !hostConnected || running || sending;
}

function showError(text) {
  $('composer-error').textContent = text;
}

async function send() {
  const text = $('input').value.trim();
  if (!text || !hostConnected || view.activeRunId || sending) return;
  showError('');
  sending = true;
  earlyEvents = [];
  const localId = `local:${++localIds}`;
  setView(addUserMessage(view, text, localId));
  $('input').value = '';
  const params = { text };
  if (view.conversation?.id) params.conversation_id = view.conversation.id;
  if (boundTab?.id !== undefined) {
    params.tab_id = boundTab.id;
    const origin = tabOrigin(boundTab.url);
    if (origin) params.origin = origin;
  }
  try {
    const started = await hostRequest('chat.send', params);
    setView(runStarted(view, started));
    sending = false;
    const early = earlyEvents.filter((e) => e.run_id === started.run_id);
    earlyEvents = [];
    for (const e of early) onEvent(e);
    loadConversations();
    renderDiagnosticsRuns();
  } catch (err) {
    setView({ ...view, items: view.items.filter((it) => it.id !== localId) });
    $('input').value = text;
    showError(t('sendFailed', [err.message]));
  } finally {
    sending = false;
    updateComposer();
  }
}

async function stop() {
  if (!view.activeRunId) return;
  try {
    await hostRequest('chat.cancel', { run_id: view.activeRunId });
  } catch (err) {
    showError(t('stopFailed', [err.message]));
  }
}

// ---------------------------------------------------------------- prompts

function syncPrompts(list) {
  const ids = new Set(list.map((p) => p.call_id));
  for (const id of [...prompts.keys()]) if (!ids.has(id)) removePrompt(id, 'gone');
  for (const p of list) if (!prompts.has(p.call_id)) showPrompt(p);
}

function answer(callId, value) {
  const entry = prompts.get(callId);
  if (!entry || !port) return;
  for (const b of entry.card.querySelectorAll('button, input, textarea')) b.disabled = true;
  port.post({ kind: 'answer', call_id: callId, answer: value });
}

function showPrompt(prompt) {
  if (prompts.has(prompt.call_id)) return;
  const params = prompt.params ?? {};
  const card = prompt.method === 'ui.confirm' ? confirmCard(prompt, params) : askCard(prompt, params);
  // The host's timeout counts from when it asked; the worker noted when that was.
  const shownAt = Date.now();
  const receivedAt = prompt.received_at ?? shownAt;
  const entry = { prompt, card, shownAt, receivedAt };
  prompts.set(prompt.call_id, entry);
  $('prompts').append(card);
  tick();
  card.focus();
}

function countdown(params) {
  const bar = el('div', { className: 'countdown-bar' }, el('span'));
  const text = el('span', { className: 'countdown-text', role: 'timer' });
  return { node: el('div', { className: 'countdown' }, text, bar), bar, text };
}

function confirmCard(prompt, params) {
  const approve = el('button', { type: 'button', className: params.dangerous ? 'danger' : '', text: t('approveButton') });
  const reject = el('button', { type: 'button', className: 'quiet', text: t('rejectButton') });
  const cd = countdown(params);
  const args = prettyJSON(params.arguments);
  const card = el('div', {
    className: `prompt confirm${params.dangerous ? ' dangerous' : ''}`, tabIndex: -1, role: 'alertdialog',
    ariaLabel: t('confirmTitle', [params.tool ?? '']),
  },
  el('h3', { text: t('confirmTitle', [params.tool ?? '']) }),
  params.dangerous ? el('p', { className: 'error', text: t('dangerousWarning') }) : null,
  params.message ? el('p', { text: params.message }) : null,
  el('p', { className: 'small' }, el('span', { className: 'muted', text: `${t('originLabel')} ` }), el('code', { text: params.origin || t('noOrigin') })),
  args && args !== '{}' ? el('details', { open: true }, el('summary', { text: t('argumentsLabel') }), el('pre', {}, el('code', { text: args }))) : null,
  cd.node,
  el('p', { className: 'muted small', text: t('confirmKeysHint') }),
  el('div', { className: 'row end' }, reject, approve),
  el('p', { className: 'refused error small', role: 'alert' }));
  card.countdown = cd;
  card.timeoutMs = params.timeout_ms;
  approve.addEventListener('click', () => answer(prompt.call_id, { approved: true }));
  reject.addEventListener('click', () => answer(prompt.call_id, { approved: false }));
  card.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      answer(prompt.call_id, { approved: false });
    } else if (e.key === 'Enter' && e.target === card) {
      // Only the card itself: a keypress meant for the composer just before the
      // card appeared must not approve anything.
      const entry = prompts.get(prompt.call_id);
      if (entry && Date.now() - entry.shownAt > 600) {
        e.preventDefault();
        answer(prompt.call_id, { approved: true });
      }
    }
  });
  return card;
}

function askCard(prompt, params) {
  const options = Array.isArray(params.options) ? params.options : [];
  const name = `ask-${prompt.call_id}`;
  const cd = countdown(params);
  const submit = el('button', { type: 'submit', text: t('answerButton') });
  const skip = el('button', { type: 'button', className: 'quiet', text: t('skipButton') });
  let field;
  let readSelected = () => [];
  if (options.length === 0) {
    field = el('textarea', { rows: 3, ariaLabel: params.question ?? '' });
    field.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey) {
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
  const form = el('form', { className: `prompt ask`, tabIndex: -1, role: 'dialog', ariaLabel: t('askTitle') },
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
  // Focus goes straight to what the person answers with.
  form.focus = () => (field.querySelector?.('input') ?? field).focus();
  return form;
}

function removePrompt(callId, reason) {
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
  if (hadFocus) (prompts.values().next().value?.card ?? $('input')).focus();
}

function markPromptRefused(callId, reason) {
  const entry = prompts.get(callId);
  if (!entry) return;
  entry.card.querySelector('.refused').textContent = reason === 'expired' ? t('answerExpired') : t('answerInvalid');
  for (const b of entry.card.querySelectorAll('button, input, textarea')) b.disabled = reason === 'expired';
}

function tick() {
  const now = Date.now();
  for (const { card, receivedAt } of prompts.values()) {
    const left = remainingMs(receivedAt, card.timeoutMs, now);
    if (left === null) continue;
    card.countdown.text.textContent = t('countdownLeft', [formatCountdown(left)]);
    card.countdown.bar.firstChild.style.width = `${Math.round(remainingFraction(receivedAt, card.timeoutMs, now) * 100)}%`;
  }
}
setInterval(tick, 500);

// ---------------------------------------------------------------- diagnostics

let diagnosticsData = null;

function toggleDrawer(id, force) {
  const section = $(id);
  const open = force ?? section.hidden;
  section.hidden = !open;
  $(`toggle-${id}`).setAttribute('aria-expanded', String(open));
  if (open && id === 'diagnostics') renderDiagnosticsRuns();
  if (open && id === 'conversations') loadConversations();
}

function renderDiagnosticsRuns() {
  const select = $('diagnostics-run');
  const runIds = Object.keys(view.runs);
  const previous = select.value;
  select.replaceChildren(...runIds.map((id, i) => el('option', { value: id, text: t('runOption', [String(i + 1), view.runs[id].status ?? '']) })));
  if (runIds.length === 0) {
    $('diagnostics-body').replaceChildren(el('p', { className: 'muted', text: t('diagnosticsEmpty') }));
    diagnosticsData = null;
    return;
  }
  select.value = runIds.includes(previous) ? previous : runIds.at(-1);
  if (!$('diagnostics').hidden) loadDiagnostics(select.value);
}

async function loadDiagnostics(runId) {
  const body = $('diagnostics-body');
  body.replaceChildren(el('p', { className: 'muted', text: t('loading') }));
  try {
    diagnosticsData = diagnosticsRun(await hostRequest('runs.get', { run_id: runId }));
    drawDiagnostics(diagnosticsData);
  } catch (err) {
    diagnosticsData = null;
    body.replaceChildren(el('p', { className: 'error', text: t('diagnosticsFailed', [err.message]) }));
  }
}

function copyButton(value) {
  const b = el('button', { type: 'button', className: 'quiet small', text: t('copyJsonButton') });
  b.addEventListener('click', () => copy(value, b));
  return b;
}

async function copy(value, button) {
  try {
    await navigator.clipboard.writeText(toJSON(value));
    button.textContent = t('copied');
    setTimeout(() => (button.textContent = t('copyJsonButton')), 1500);
  } catch (err) {
    showError(t('copyFailed', [err.message]));
  }
}

function jsonBlock(title, value) {
  return el('details', {}, el('summary', {}, el('span', { text: title }), ' ', copyButton(value)), el('pre', {}, el('code', { text: toJSON(value) })));
}

function drawDiagnostics(d) {
  const body = $('diagnostics-body');
  const head = el('p', { className: 'small' }, el('span', {
    text: t('diagnosticsTotals', [String(d.calls.length), String(d.totals.inputTokens), String(d.totals.outputTokens), String(d.totals.latencyMs)]),
  }));
  const calls = d.calls.map((c, i) => {
    const tools = el('ul', { className: 'tool-specs' }, ...c.tools.map((spec) =>
      el('li', {}, el('details', {},
        el('summary', {}, el('code', { text: spec.name ?? '' }), ' ', el('span', { className: 'muted small', text: spec.description ?? '' })),
        el('pre', {}, el('code', { text: prettyJSON(spec.parameters) }))))));
    const unavailable = el('ul', {}, ...c.unavailable.map((u) => el('li', {}, el('code', { text: u.name ?? '' }), ' ', el('span', { text: u.reason ?? '' }))));
    return el('details', { className: 'model-call', open: i === d.calls.length - 1 },
      el('summary', {}, el('span', {
        text: t('modelCallSummary', [String(i + 1), c.purpose, c.model, String(c.latencyMs), String(c.inputTokens), String(c.outputTokens)]),
      }), ' ', copyButton(c.raw)),
      c.error ? el('p', { className: 'error', text: c.error }) : null,
      el('h4', { text: t('toolsSentLabel', [String(c.tools.length)]) }), tools,
      el('h4', { text: t('unavailableLabel', [String(c.unavailable.length)]) }),
      c.unavailable.length ? unavailable : el('p', { className: 'muted small', text: t('noneLabel') }),
      c.system ? jsonBlock(t('systemPromptLabel'), c.system) : null,
      jsonBlock(t('requestMessagesLabel', [String(c.messages.length)]), c.messages),
      jsonBlock(t('responseLabel'), c.response),
      c.attempts.length > 1 ? jsonBlock(t('attemptsLabel', [String(c.attempts.length)]), c.attempts) : null);
  });
  body.replaceChildren(head, ...calls);
}

// ---------------------------------------------------------------- helpers

function formatTime(value) {
  const d = new Date(value ?? '');
  if (Number.isNaN(d.getTime())) return '';
  return new Intl.DateTimeFormat(t('htmlLang'), { dateStyle: 'short', timeStyle: 'short' }).format(d);
}

// ---------------------------------------------------------------- wiring

localize(document);
$('input').placeholder = t('inputPlaceholder');
$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  send();
});
$('input').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});
$('stop').addEventListener('click', stop);
$('new-conversation').addEventListener('click', newConversation);
$('toggle-conversations').addEventListener('click', () => toggleDrawer('conversations'));
$('toggle-diagnostics').addEventListener('click', () => toggleDrawer('diagnostics'));
$('diagnostics-run').addEventListener('change', (e) => loadDiagnostics(e.target.value));
$('diagnostics-copy').addEventListener('click', (e) => diagnosticsData && copy(diagnosticsData, e.target));
$('open-options').addEventListener('click', () => openOptionsPage());
$('host-retry').addEventListener('click', () => sendRuntimeMessage({ type: 'host.retry' }).catch(() => {}));
// Only this window's active tab: each window has its own side panel.
onTabActivated(({ tabId, windowId }) => {
  if (boundTab?.windowId === undefined || windowId === boundTab.windowId) refreshBoundTab(tabId);
});
onTabUpdated((tabId, change) => {
  if (tabId === boundTab?.id && (change.url || change.title || change.status === 'complete')) refreshBoundTab(tabId);
});
refreshBoundTab();
connectPanel();
renderChat();
