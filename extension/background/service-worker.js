// Service worker entry point. Listeners are registered synchronously at the
// top level so Chrome can wake this worker for them. All state lives in the
// host client and dies with the worker on purpose: it describes a native port
// that dies with the worker too. Anything that must outlive a restart belongs
// in chrome.storage.

import * as chromeApi from '../lib/chrome-api.js';
import { createHostClient } from '../lib/host-client.js';
import { createDispatcher } from './dispatcher.js';
import { createRoutes } from './routes.js';
import { registerBrowserHandlers } from './browser/index.js';

const client = createHostClient({
  openPort: chromeApi.connectNative,
  clientVersion: chromeApi.manifestVersion(),
});

// The browser tools' hands: host → extension requests (protocol/BROWSER.md).
registerBrowserHandlers(client, chromeApi);

const dispatcher = createDispatcher(createRoutes(client), {
  runtimeId: chromeApi.runtimeId(),
  origin: chromeApi.extensionOrigin(),
});

chromeApi.onRuntimeMessage((message, sender) => dispatcher.dispatch(message, sender));
chromeApi.onRuntimeConnect((port) => dispatcher.acceptPort(port));
// Until the side panel exists, the toolbar button leads to the host status.
chromeApi.onActionClicked(() => chromeApi.openOptionsPage());

// The stable handle for debuggers and end-to-end tests (DESIGN.md).
globalThis.ferryHost = Object.freeze({
  request: (method, params, timeout) =>
    client.request(method, params, timeout === undefined ? undefined : { timeout }),
  state: () => client.snapshot(),
});
