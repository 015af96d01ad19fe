// The service worker's message and port table. Only extension pages may reach
// the host; content scripts will get their own, narrower entries.

import { TIER_CONTENT_SCRIPT, TIER_EXTENSION_PAGE } from './dispatcher.js';
import { PAGE_PORT } from './pageactions.js';
import { PANEL_PORT, STATUS_PORT } from '../lib/wire.js';

export { STATUS_PORT };

/** `ui` is the side panel router (background/ui.js); without it no panel port exists. */
export function createRoutes(client, { ui, pages, dialogs } = {}) {
  const pagesOnly = [TIER_EXTENSION_PAGE];
  return {
    messages: {
      'host.request': {
        tiers: pagesOnly,
        handle: ({ method, params, timeout }) =>
          client.request(method, params, timeout === undefined ? undefined : { timeout }),
      },
      'host.status': {
        tiers: pagesOnly,
        handle: () => client.snapshot(),
      },
      // A page's dialog relay (content/dialog-relay.js): what its page's dialogs
      // do, recorded for the browser tools of that tab and nothing more.
      ...(dialogs && {
        'page.dialog': {
          tiers: [TIER_CONTENT_SCRIPT],
          handle: (message, sender) => dialogs.notice(message?.dialog, sender),
        },
      }),
      'host.retry': {
        tiers: pagesOnly,
        handle: () => {
          client.retry();
          return client.snapshot();
        },
      },
    },
    ports: {
      // Pushes every state change to the page for as long as it is open.
      [STATUS_PORT]: {
        tiers: pagesOnly,
        open(port) {
          const unsubscribe = client.subscribe((snap) => port.post(snap));
          port.onDisconnect(unsubscribe);
          // A page asking for status is demand enough to try the host now.
          if (client.state === 'disconnected') client.connect();
          port.post(client.snapshot());
        },
      },
      // The side panel: run events, prompts to answer, and the answers back.
      ...(ui && {
        [PANEL_PORT]: {
          tiers: pagesOnly,
          open(port) {
            if (client.state === 'disconnected') client.connect();
            ui.openPanel(port);
          },
        },
      }),
      // Page actions: the content-script bridges, one port per frame. The only
      // route content scripts have; it reaches page.actions.* and nothing else.
      ...(pages && {
        [PAGE_PORT]: {
          tiers: [TIER_CONTENT_SCRIPT],
          open: (port) => pages.open(port),
        },
      }),
    },
  };
}
