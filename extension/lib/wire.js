// Names the service worker and the extension's pages share. Pages import these
// from here, never from the worker's modules. They are defined once, in
// lib/wire-names.js (a classic script, so that content scripts load it too).

import './wire-names.js';

const W = globalThis.FerryWire;

/** The side panel's port: events, prompts and answers (background/ui.js). */
export const PANEL_PORT = W.PANEL_PORT;
/** The options page's port: the host connection's status (background/routes.js). */
export const STATUS_PORT = W.STATUS_PORT;
/** The content-script bridges' ports, one per frame (background/pageactions.js). */
export const PAGE_PORT = W.PAGE_PORT;
/** The page-action hops' message types, call operations and host methods (protocol/PAGES.md). */
export const { PAGE, FRAME, OP, HOST, HANDSHAKE, TARGET_EVENT } = W;
