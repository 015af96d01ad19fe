// A run's events (chat.event, relayed by the service worker) applied to the
// conversation shown; events of other conversations only refresh the list,
// or bring up a run a page started for the tab this panel is bound to.

import { hostRequest } from '../lib/host-request.js';
import { app, setView } from './app.js';
import { loadConversations, openConversation } from './conversations.js';
import { applyEvent, flush, isTerminal } from './state.js';

// Events of the run a chat.send is starting can arrive before its answer.
let early = [];

/** Starts holding the events of a run being started (chat.send). */
export function holdEarlyEvents() {
  early = [];
}

/** Applies the held events of the run that started, drops the rest. */
export function releaseEarlyEvents(runId) {
  const mine = early.filter((e) => e.run_id === runId);
  early = [];
  for (const e of mine) onEvent(e);
}

export function onEvent(event) {
  if (!event) return;
  const { view } = app;
  if (app.sending && event.conversation_id !== view.conversation?.id) {
    early.push(event);
    return;
  }
  if (!view.conversation?.id || event.conversation_id !== view.conversation.id) {
    // Another conversation moved: keep the list's order fresh.
    if (isTerminal(event) || event.type === 'run_started') loadConversations();
    // A run started elsewhere for the tab this panel is bound to (a page's
    // ferry.ask): show it, unless this panel is busy with a run of its own.
    if (event.type === 'run_started' && app.boundTab && !view.activeRunId && !app.sending) followTabRun(event.conversation_id);
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
    if (got.conversation?.tab_id === app.boundTab?.id && !app.view.activeRunId && !app.sending) openConversation(id);
  } catch {
    // Gone already: nothing to show.
  }
}
