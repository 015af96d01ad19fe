// The conversation as it is drawn: messages, tool cards, notices and the
// task list. Items are redrawn only when they changed (state.js keeps them
// immutable), so a card the person opened stays open.

import { byId as $, el } from '../lib/dom.js';
import { t } from '../lib/i18n.js';
import { app } from './app.js';
import { askAgain } from './composer.js';
import { renderMarkdown } from './render-markdown.js';
import { prettyJSON, resultLabel, usageTotals } from './state.js';

const rendered = new Map(); // item id → {item, node}

/** Forgets what was drawn: the next renderChat draws the view afresh. */
export function resetChat() {
  rendered.clear();
  $('messages').replaceChildren();
}

export function renderChat() {
  const { view } = app;
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
  renderUsage();
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
  return el('li', { className: `msg tool-card ${item.status}`, dataset: { callId: item.id } }, details, confirmationRecord(item));
}

/**
 * What the person was asked before the call could run, and how it ended, kept in
 * the transcript outside the collapsed card: the card above the composer goes
 * once answered, this stays (the host records it with the call's result). A call
 * that did not run for want of a yes can be asked again.
 */
function confirmationRecord(item) {
  const c = item.result?.confirmation;
  if (!c || typeof c !== 'object') return null;
  let outcome;
  switch (c.answer) {
    case 'approved': outcome = t('confirmAnswerApproved'); break;
    case 'denied': outcome = t('confirmAnswerDenied'); break;
    case 'timeout': outcome = t('confirmAnswerTimeout', [String(Math.round((Number(c.timeout_ms) || 0) / 1000))]); break;
    default: outcome = t('confirmAnswerFailed'); break;
  }
  const parts = [
    c.message ? el('p', { className: 'asked', text: t('confirmAskedLabel', [c.message]) }) : null,
    el('p', { className: `outcome ${c.answer === 'approved' ? 'ok' : 'warn'}`, text: outcome }),
  ];
  if (c.answer !== 'approved') {
    const again = el('button', { type: 'button', className: 'small ask-again', text: t('askAgainButton') });
    again.disabled = $('send').disabled;
    again.addEventListener('click', () => askAgain(item.name));
    parts.push(el('div', { className: 'row' }, again));
  }
  return el('div', { className: 'confirmation-record' }, ...parts);
}

/** The tokens of the last run and of the conversation, as the host counted them. */
function renderUsage() {
  const { run, conversation } = usageTotals(app.view);
  const node = $('usage');
  node.hidden = run === null && conversation === 0;
  if (node.hidden) return;
  const fmt = new Intl.NumberFormat(t('htmlLang'));
  node.textContent = t('usageLine', [fmt.format(run?.tokens ?? 0), fmt.format(conversation)]);
  node.title = run ? t('usageRunNotice', [fmt.format(run.tokens), fmt.format(run.input), fmt.format(run.output)]) : '';
}

function noticeText(item) {
  const [detail = ''] = item.args ?? [];
  switch (item.key) {
    case 'noticeCompacted': return t('noticeCompacted');
    case 'noticeLoopPaused': return t('noticeLoopPaused', [detail]);
    case 'noticeRunCancelled': return t('noticeRunCancelled');
    case 'noticeBudgetTokens': return t('noticeBudgetTokens', formatCounts(item.args));
    case 'noticeBudgetToolCalls': return t('noticeBudgetToolCalls', formatCounts(item.args));
    default: return t('noticeRunFailed', [detail]);
  }
}

/** Counts written as the person's language writes numbers; other arguments as they are. */
function formatCounts(args = []) {
  const fmt = new Intl.NumberFormat(t('htmlLang'));
  return args.map((a) => (/^\d+$/.test(a) ? fmt.format(Number(a)) : a));
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
  const tasks = app.view.tasks ?? [];
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
