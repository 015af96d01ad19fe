// The side panel's shared state. Its parts (chat.js, conversations.js,
// prompts.js, …) read and change it here; a change of the conversation shown
// goes through setView, which redraws whatever registered with onRender.

import { byId } from '../lib/dom.js';
import { emptyConversation } from './state.js';

export const app = {
  view: emptyConversation(),
  /** The host's conversations, newest first (conversations.list). */
  conversations: [],
  hostConnected: false,
  /** The tab this panel acts for: {id, windowId, title, url}, or null. */
  boundTab: null,
  /** The port to the service worker (PANEL_PORT), while connected. */
  port: null,
  /** A chat.send is on its way. */
  sending: false,
};

const renderers = [];

/** fn runs after every setView. */
export function onRender(fn) {
  renderers.push(fn);
}

export function setView(next) {
  app.view = next;
  for (const fn of renderers) fn();
}

/** The error line under the composer ('' clears it). */
export function showError(text) {
  byId('composer-error').textContent = text;
}

/** Opens or closes a drawer (conversations, diagnostics); returns whether it is open. */
export function setDrawer(id, open) {
  byId(id).hidden = !open;
  byId(`toggle-${id}`).setAttribute('aria-expanded', String(open));
  return open;
}
