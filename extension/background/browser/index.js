// Registers every host → extension browser method (protocol/BROWSER.md) on
// the host client. `api` is lib/chrome-api.js (or a fake of it in tests).
// `opts.dialogs` is the worker's record of the tabs' dialogs (dialogs.js), fed
// by the pages' relays; one is made when none is given.

import { createDialogs, createLeaving } from './dialogs.js';
import { createPageMethods } from './page.js';
import { createTabMethods } from './tabs.js';

export function createBrowserMethods(api, opts = {}) {
  const dialogs = opts.dialogs ?? createDialogs(api);
  const o = { ...opts, dialogs, leaving: createLeaving(api, dialogs, opts) };
  return { ...createTabMethods(api, o), ...createPageMethods(api, o) };
}

export function registerBrowserHandlers(client, api, opts = {}) {
  const methods = createBrowserMethods(api, opts);
  for (const [method, fn] of Object.entries(methods)) client.registerHandler(method, (params) => fn(params ?? {}));
  return methods;
}
