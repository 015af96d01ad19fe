// Service worker entry point. Listeners are registered synchronously at the
// top level so Chrome can wake this worker for them. All state lives in the
// host client and dies with the worker on purpose: it describes a native port
// that dies with the worker too. Anything that must outlive a restart belongs
// in the host's database.

import * as chromeApi from '../lib/chrome-api.js';
import { createHostClient } from '../lib/host-client.js';
import { createDispatcher } from './dispatcher.js';
import { createRoutes } from './routes.js';
import { registerBrowserHandlers } from './browser/index.js';
import { createDialogs } from './browser/dialogs.js';
import { createUiRouter } from './ui.js';
import { createPageActions } from './pageactions.js';

const client = createHostClient({
  openPort: chromeApi.connectNative,
  clientVersion: chromeApi.manifestVersion(),
});

// The browser tools' hands: host → extension requests (protocol/BROWSER.md);
// the pages' dialogs as their relays report them.
const dialogs = createDialogs(chromeApi);
registerBrowserHandlers(client, chromeApi, { dialogs });

// Confirmations, ask_user and run events: to and from the side panel.
const ui = createUiRouter({ client });

// Actions pages declare (window.ferry, WebMCP): their bridges ↔ the host.
const pages = createPageActions(client, chromeApi);
pages.register();

const dispatcher = createDispatcher(createRoutes(client, { ui, pages, dialogs }), {
  runtimeId: chromeApi.runtimeId(),
  origin: chromeApi.extensionOrigin(),
});

chromeApi.onRuntimeMessage((message, sender) => dispatcher.dispatch(message, sender));
chromeApi.onRuntimeConnect((port) => dispatcher.acceptPort(port));
// The toolbar button opens the side panel; where the side panel API is missing
// the click still arrives here and leads to the host status instead.
chromeApi.onActionClicked(() => chromeApi.openOptionsPage());
chromeApi.openSidePanelOnActionClick().catch((err) => console.error('ferry: side panel behaviour', err));

// The stable handle for debuggers and end-to-end tests (README: Wire protocol).
globalThis.ferryHost = Object.freeze({
  request: (method, params, timeout) =>
    client.request(method, params, timeout === undefined ? undefined : { timeout }),
  state: () => client.snapshot(),
});
