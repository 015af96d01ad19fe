// The composer: send a message (chat.send, bound to the panel's tab), stop the
// run going on. What the person types here stays theirs: no card takes the
// focus from it, and no key pressed here answers a card.

import { byId as $ } from '../lib/dom.js';
import { hostRequest } from '../lib/host-request.js';
import { t } from '../lib/i18n.js';
import { app, setView, showError } from './app.js';
import { loadConversations } from './conversations.js';
import { renderDiagnosticsRuns } from './diagnostics.js';
import { holdEarlyEvents, releaseEarlyEvents } from './events.js';
import { addUserMessage, runStarted } from './state.js';
import { tabOrigin } from './view-model.js';

let localIds = 0;

export function updateComposer() {
  const running = Boolean(app.view.activeRunId);
  $('stop').hidden = !running;
  $('send').disabled = !app.hostConnected || running || app.sending;
  // Ask again sends a message: it waits for the same things Send does.
  for (const b of document.querySelectorAll('.ask-again')) b.disabled = $('send').disabled;
}

export async function send() {
  return sendText($('input').value.trim(), { fromComposer: true });
}

/**
 * Ask again, on a call that did not run because nobody said yes: the model is
 * told to make the same call again in this conversation, so a new card comes up
 * in a run that knows why it is asked, and whatever the person answers, the
 * model hears. Running the call behind the model's back would leave the
 * conversation saying it never happened.
 */
export function askAgain(tool) {
  return sendText(t('askAgainMessage', [tool]), { fromComposer: false });
}

async function sendText(text, { fromComposer }) {
  if (!text || !app.hostConnected || app.view.activeRunId || app.sending) return;
  showError('');
  app.sending = true;
  holdEarlyEvents();
  const localId = `local:${++localIds}`;
  setView(addUserMessage(app.view, text, localId));
  if (fromComposer) $('input').value = '';
  const params = { text };
  if (app.view.conversation?.id) params.conversation_id = app.view.conversation.id;
  const tab = app.boundTab;
  if (tab?.id !== undefined) {
    params.tab_id = tab.id;
    const origin = tabOrigin(tab.url);
    if (origin) params.origin = origin;
  }
  try {
    const started = await hostRequest('chat.send', params);
    setView(runStarted(app.view, started));
    app.sending = false;
    releaseEarlyEvents(started.run_id);
    loadConversations();
    renderDiagnosticsRuns();
  } catch (err) {
    setView({ ...app.view, items: app.view.items.filter((it) => it.id !== localId) });
    if (fromComposer) $('input').value = text;
    showError(t('sendFailed', [err.message]));
  } finally {
    app.sending = false;
    updateComposer();
  }
}

export async function stop() {
  if (!app.view.activeRunId) return;
  try {
    await hostRequest('chat.cancel', { run_id: app.view.activeRunId });
  } catch (err) {
    showError(t('stopFailed', [err.message]));
  }
}
