// The names the extension's parts share on the wire: runtime port names, and the
// message types of the page-action hops (protocol/PAGES.md has every message with
// its fields), defined once. A classic script with no import or export, so that the
// content-script bridge (a classic script of the isolated world) loads it from the
// manifest; it defines globalThis.FerryWire there. ES modules (the service worker,
// the extension's pages) import the same names from lib/wire.js, which re-exports
// them. The page API (MAIN world) gets the ones it needs with the bridge's handshake.
(function ferryWire(global) {
  'use strict';
  if (global.FerryWire) return;
  const WIRE = Object.freeze({
    // runtime.connect port names
    PAGE_PORT: 'ferry-page', // content-script bridge ↔ service worker, one per frame
    STATUS_PORT: 'host-status', // options page ← service worker: the host's state
    PANEL_PORT: 'ferry-panel', // side panel ↔ service worker

    // page API (MAIN world) ↔ bridge (isolated world), over the private MessageChannel
    HANDSHAKE: 'ferry:bridge-port', // window message carrying the channel's port, once
    TARGET_EVENT: '__ferry_target', // DOM event on an action's target: hands it to the bridge
    PAGE: Object.freeze({
      // page → bridge
      UPDATE: 'update', CALL: 'call', HELLO: 'hello', DONE: 'done',
      // bridge → page
      PREPARE: 'prepare', EXEC: 'exec', CONFIRM: 'confirm', CONFIRM_DONE: 'confirm_done',
      DENIED: 'denied', REPLY: 'reply', REFUSED: 'refused', STATUS: 'status',
    }),
    // bridge ↔ service worker, over PAGE_PORT
    FRAME: Object.freeze({
      // bridge → worker
      UPDATE: 'update', CALL: 'call', HELLO: 'hello', RAN: 'ran', CONFIRMED: 'confirmed',
      // worker → bridge
      RUN: 'run', CONFIRM: 'confirm', CONFIRM_DONE: 'confirm_done', DENIED: 'denied',
      REPLY: 'reply', REFUSED: 'refused', STATUS: 'status',
    }),
    // the operations of a CALL (ferry.execute, ferry.tools, ferry.ask)
    OP: Object.freeze({ EXECUTE: 'execute', TOOLS: 'tools', ASK: 'ask' }),
    // JSON-RPC methods of the page-action path (host ↔ service worker)
    HOST: Object.freeze({
      UPDATE: 'page.actions.update', REMOVE: 'page.actions.remove', EXECUTE: 'page.actions.execute',
      LIST: 'page.actions.list', ASK: 'page.ask', STATUS: 'page.status',
      RUN: 'page.action.run', CONFIRM: 'page.action.confirm', CONFIRM_DONE: 'page.action.confirm.done',
      DENIED: 'page.action.denied',
    }),
  });
  Object.defineProperty(global, 'FerryWire', { value: WIRE, configurable: true, enumerable: false, writable: false });
})(globalThis);
