// The conversations drawer (list, rename, delete) and opening one: a stored
// conversation is drawn from its history, one with a run going on from the
// events the service worker kept (replay) on top of it.

import { byId as $, el } from '../lib/dom.js';
import { hostRequest } from '../lib/host-request.js';
import { t } from '../lib/i18n.js';
import { app, setDrawer, setView, showError } from './app.js';
import { resetChat } from './chat.js';
import { renderDiagnosticsRuns } from './diagnostics.js';
import { catchUp, emptyConversation, fromHistory } from './state.js';
import { sortConversations, upsertConversation } from './view-model.js';

// ---------------------------------------------------------------- replay

const replayWaiters = new Map();

/** The events the worker kept of a run still going on ([] when none arrive in time). */
function requestReplay(runId) {
  return new Promise((resolve) => {
    if (!app.port) {
      resolve([]);
      return;
    }
    replayWaiters.set(runId, resolve);
    app.port.post({ kind: 'replay', run_id: runId });
    setTimeout(() => {
      if (replayWaiters.get(runId) === resolve) {
        replayWaiters.delete(runId);
        resolve([]);
      }
    }, 3000);
  });
}

/** The worker's answer to a replay request. */
export function replayed(runId, events) {
  replayWaiters.get(runId)?.(events ?? []);
  replayWaiters.delete(runId);
}

// ---------------------------------------------------------------- the list

export async function loadConversations() {
  if (!app.hostConnected) return;
  try {
    const got = await hostRequest('conversations.list', { limit: 100 });
    app.conversations = sortConversations(got.conversations ?? []);
    renderConversations();
  } catch (err) {
    console.error('ferry: conversations.list', err);
  }
}

/** A conversation's title as the list knows it ('' when unknown or untitled). */
export function conversationTitle(id) {
  return app.conversations.find((c) => c.id === id)?.title ?? '';
}

export function renderConversations() {
  const list = $('conversation-list');
  const { conversations, view } = app;
  $('conversations-empty').hidden = conversations.length > 0;
  list.replaceChildren(...conversations.map((c) => {
    const current = c.id === view.conversation?.id;
    const open = el('button', {
      type: 'button', className: 'link conv-open', text: c.title || t('untitledConversation'),
      ariaCurrent: current ? 'true' : undefined,
    });
    open.addEventListener('click', () => {
      openConversation(c.id);
      setDrawer('conversations', false);
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
        app.conversations = upsertConversation(app.conversations, got.conversation);
        if (app.view.conversation?.id === c.id) app.view = { ...app.view, conversation: got.conversation };
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
    app.conversations = app.conversations.filter((x) => x.id !== c.id);
    if (app.view.conversation?.id === c.id) newConversation();
    renderConversations();
  } catch (err) {
    showError(t('deleteFailed', [err.message]));
  }
}

// ---------------------------------------------------------------- opening

export function newConversation() {
  resetChat();
  setView(emptyConversation());
  renderConversations();
  renderDiagnosticsRuns();
  $('input').focus();
}

export async function openConversation(id) {
  try {
    const got = await hostRequest('conversations.get', { conversation_id: id });
    const events = got.active_run_id ? await requestReplay(got.active_run_id) : [];
    resetChat();
    setView(got.active_run_id ? catchUp(got, events) : fromHistory(got));
    renderConversations();
    renderDiagnosticsRuns();
  } catch (err) {
    showError(t('openConversationFailed', [err.message]));
  }
}

function formatTime(value) {
  const d = new Date(value ?? '');
  if (Number.isNaN(d.getTime())) return '';
  return new Intl.DateTimeFormat(t('htmlLang'), { dateStyle: 'short', timeStyle: 'short' }).format(d);
}
