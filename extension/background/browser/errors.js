// Errors of the host → extension browser methods (protocol/BROWSER.md):
// JSON-RPC code RPC.BROWSER_ERROR with data.reason, which the host maps to a tool
// code. toRpcError (lib/host-errors.js) sends .code, .message and .data as they are.

import { RPC } from '../../lib/host-errors.js';

export const BROWSER_ERROR = RPC.BROWSER_ERROR;

export const REASONS = Object.freeze([
  'no_tab', 'restricted_page', 'no_permission', 'stale_ref', 'no_element',
  'element_state', 'invalid', 'timeout', 'script_error', 'no_frame', 'gone', 'document_changed',
]);

export class BrowserError extends Error {
  constructor(reason, message, extra = {}) {
    super(message);
    this.name = 'BrowserError';
    this.code = BROWSER_ERROR;
    this.reason = reason;
    this.data = { reason, ...extra };
  }
}

export function fail(reason, message, extra) {
  return new BrowserError(reason, message, extra);
}

/** A failure reported by code running in a page ({reason, message, ...data}) as a thrown error. */
export function fromReport(report) {
  const { reason = 'script_error', message = 'the page script failed', ...extra } = report ?? {};
  return new BrowserError(reason, message, extra);
}
