// The service worker's message and port table. Only extension pages may reach
// the host; content scripts will get their own, narrower entries.

import { TIER_EXTENSION_PAGE } from './dispatcher.js';

export const STATUS_PORT = 'host-status';

export function createRoutes(client) {
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
    },
  };
}
