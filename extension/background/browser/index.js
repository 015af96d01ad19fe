// Registers every host → extension browser method (protocol/BROWSER.md) on
// the host client. `api` is lib/chrome-api.js (or a fake of it in tests).

import { createPageMethods } from './page.js';
import { createTabMethods } from './tabs.js';

export function createBrowserMethods(api, opts = {}) {
  return { ...createTabMethods(api, opts), ...createPageMethods(api, opts) };
}

export function registerBrowserHandlers(client, api, opts = {}) {
  const methods = createBrowserMethods(api, opts);
  for (const [method, fn] of Object.entries(methods)) client.registerHandler(method, (params) => fn(params ?? {}));
  return methods;
}
