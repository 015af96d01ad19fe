// The side panel: chat with the agent, the run's tool calls, confirmations and
// questions, the task list, conversations and diagnostics. This file connects
// to the service worker and wires the page; each part lives in its own module
// (chat.js, prompts.js, conversations.js, diagnostics.js, composer.js,
// binding.js, events.js), the logic they share in state.js, view-model.js and
// prompt-view.js. Host, model and page text is placed as text only.

import { connectRuntime, onTabActivated, onTabUpdated, openOptionsPage, runtimeId, sendRuntimeMessage } from '../lib/chrome-api.js';
import { byId as $, stepNodes } from '../lib/dom.js';
import { localize, t } from '../lib/i18n.js';
import { PANEL_PORT } from '../lib/wire.js';
import { displayState, helpSteps, statusLabel } from '../options/status-view.js';
import { app, onRender, setDrawer, setView } from './app.js';
import { refreshBoundTab, refreshPageActions, renderBinding } from './binding.js';
import { renderChat } from './chat.js';
import { send, stop, updateComposer } from './composer.js';
import { loadConversations, newConversation, openConversation, replayed } from './conversations.js';
import { copyDiagnostics, loadDiagnostics, renderDiagnosticsRuns } from './diagnostics.js';
import { onEvent } from './events.js';
import { markPromptRefused, removePrompt, reviewPrompt, showPrompt, syncPrompts, tick } from './prompts.js';

// ---------------------------------------------------------------- host status

function renderStatus(snapshot) {
  const shown = displayState(snapshot);
  $('host-status').dataset.state = shown;
  $('host-status-text').textContent = statusLabel(shown, t);
  const parts = stepNodes(helpSteps(snapshot, runtimeId(), t));
  $('host-help-steps').replaceChildren(...parts);
  $('host-help').hidden = parts.length === 0;
  const was = app.hostConnected;
  app.hostConnected = shown === 'connected';
  updateComposer();
  if (app.hostConnected && !was) onConnected();
}

function onConnected() {
  loadConversations();
  refreshPageActions();
  if (app.view.conversation?.id) openConversation(app.view.conversation.id);
}

// ---------------------------------------------------------------- the panel port

function connectPanel() {
  app.port = connectRuntime(PANEL_PORT);
  app.port.onMessage(onPanelMessage);
  app.port.onDisconnect(() => {
    app.port = null;
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
      if (message.conversation_id && message.conversation_id === app.view.conversation?.id) {
        setView({ ...app.view, tasks: message.tasks ?? [] });
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
      replayed(message.run_id, message.events);
      break;
    default:
      break;
  }
}

// ---------------------------------------------------------------- wiring

function toggleDrawer(id) {
  const open = setDrawer(id, $(id).hidden);
  if (open && id === 'diagnostics') renderDiagnosticsRuns();
  if (open && id === 'conversations') loadConversations();
}

onRender(renderChat);
onRender(renderBinding);
onRender(updateComposer);

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
$('prompt-review').addEventListener('click', reviewPrompt);
$('new-conversation').addEventListener('click', newConversation);
$('toggle-conversations').addEventListener('click', () => toggleDrawer('conversations'));
$('toggle-diagnostics').addEventListener('click', () => toggleDrawer('diagnostics'));
$('diagnostics-run').addEventListener('change', (e) => loadDiagnostics(e.target.value));
$('diagnostics-copy').addEventListener('click', (e) => copyDiagnostics(e.target));
$('open-options').addEventListener('click', () => openOptionsPage());
$('host-retry').addEventListener('click', () => sendRuntimeMessage({ type: 'host.retry' }).catch(() => {}));
// Only this window's active tab: each window has its own side panel.
onTabActivated(({ tabId, windowId }) => {
  if (app.boundTab?.windowId === undefined || windowId === app.boundTab.windowId) refreshBoundTab(tabId);
});
onTabUpdated((tabId, change) => {
  if (tabId === app.boundTab?.id && (change.url || change.title || change.status === 'complete')) refreshBoundTab(tabId);
});
setInterval(tick, 500);
refreshBoundTab();
connectPanel();
setView(app.view);
