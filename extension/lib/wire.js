// Names the service worker and the extension's pages share. Pages import these
// from here, never from the worker's modules.

/** The side panel's port: events, prompts and answers (background/ui.js). */
export const PANEL_PORT = 'ferry-panel';
/** The options page's port: the host connection's status (background/routes.js). */
export const STATUS_PORT = 'host-status';
