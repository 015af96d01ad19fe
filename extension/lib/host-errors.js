// Errors of the host client, and the one table that turns the browser's
// native-messaging disconnect texts into stable reasons the UI can act on.

// Every JSON-RPC error code of the wire, named as protocol/errors.go names them
// (CodeProtocolMismatch is PROTOCOL_MISMATCH); a test holds the two together.
export const RPC = Object.freeze({
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  PROTOCOL_MISMATCH: -32000,
  CANCELLED: -32001,
  UNAUTHORIZED: -32003,
  BUSY: -32004,
  BROWSER_ERROR: -32010,
  ASK_REFUSED: -32020,
});

export class HostError extends Error {
  constructor(message, { reason, code, data } = {}) {
    super(message);
    this.name = 'HostError';
    this.reason = reason;
    if (code !== undefined) this.code = code;
    if (data !== undefined) this.data = data;
  }
}

// Chrome's exact texts, as chrome.runtime.lastError gives them when a native port
// closes. Anything unlisted is a plain "disconnected".
const DISCONNECT_REASONS = new Map([
  ['Specified native messaging host not found.', 'not_installed'],
  ['Access to the specified native messaging host is forbidden.', 'forbidden'],
  ['Native host has exited.', 'exited'],
  ['Error when communicating with the native messaging host.', 'protocol_error'],
]);

const ADVICE = {
  not_installed:
    'The Ferry host is not installed for this browser. Run `ferry install` in a terminal, then retry.',
  forbidden:
    'The browser refused to let this extension start the Ferry host. Run `ferry doctor` to see why ' +
    '(usually this extension ID is missing from the host manifest: `ferry install --extension-id <ID>`).',
  exited:
    'The Ferry host exited. Ferry reconnects on its own; if this keeps happening, run `ferry doctor` and read the host log.',
  protocol_error:
    'The browser could not exchange messages with the Ferry host (a malformed or oversized message). ' +
    'Run `ferry doctor` and read the host log.',
  disconnected: 'The connection to the Ferry host closed.',
};

export function disconnectReason(browserMessage) {
  return DISCONNECT_REASONS.get(browserMessage) ?? 'disconnected';
}

export function disconnectError(browserMessage) {
  const reason = disconnectReason(browserMessage);
  const said = browserMessage ? ` (browser: "${browserMessage}")` : '';
  return new HostError(ADVICE[reason] + said, { reason });
}

/** A JSON-RPC error object from the host, as a rejectable Error. */
export function rpcError(error) {
  const message = typeof error?.message === 'string' && error.message
    ? error.message
    : `host error ${error?.code ?? ''}`.trim();
  return new HostError(message, { reason: 'rpc_error', code: error?.code, data: error?.data });
}

/** The reverse: what a failing handler of a host request sends back. */
export function toRpcError(err) {
  if (Number.isInteger(err?.code)) {
    const out = { code: err.code, message: String(err.message ?? '') };
    if (err.data !== undefined) out.data = err.data;
    return out;
  }
  return { code: RPC.INTERNAL_ERROR, message: String(err?.message ?? err) };
}

/** Errors cross runtime messaging as plain objects; keep what callers use. */
export function serializeError(err) {
  const out = { message: String(err?.message ?? err) };
  for (const key of ['reason', 'code', 'data']) {
    if (err?.[key] !== undefined) out[key] = err[key];
  }
  return out;
}

export function deserializeError(obj) {
  return new HostError(obj?.message ?? 'unknown error', { reason: obj?.reason, code: obj?.code, data: obj?.data });
}
