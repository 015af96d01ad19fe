// How the extension's pages (side panel, options page) ask the host: through
// the service worker, which owns the one native port. Pages never import the
// worker's modules; this message is their whole way in.

import { sendRuntimeMessage } from './chrome-api.js';
import { deserializeError } from './host-errors.js';

/** The host's answer to one request; a refusal rejects with its HostError. */
export async function hostRequest(method, params, timeout) {
  const reply = await sendRuntimeMessage({ type: 'host.request', method, params, timeout });
  if (!reply?.ok) throw deserializeError(reply?.error);
  return reply.result;
}
