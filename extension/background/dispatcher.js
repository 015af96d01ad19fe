// One dispatcher for everything extension pages and (later) content scripts
// send to the service worker. Each message type and port name lists the
// sender tiers allowed to use it, so reaching the host is an explicit grant,
// never a default.

import { serializeError } from '../lib/host-errors.js';

export const TIER_EXTENSION_PAGE = 'extension_page';
export const TIER_CONTENT_SCRIPT = 'content_script';
export const TIER_UNTRUSTED = 'untrusted';

/**
 * Which tier a runtime.MessageSender belongs to. `origin` is the extension's
 * origin with the trailing slash ("chrome-extension://<id>/").
 */
export function senderTier(sender, { runtimeId, origin }) {
  if (!sender || sender.id !== runtimeId) return TIER_UNTRUSTED;
  const url = typeof sender.url === 'string' ? sender.url : '';
  // sender.origin is absent in some contexts; when present it must agree.
  const originAgrees = sender.origin === undefined || `${sender.origin}/` === origin;
  if (url.startsWith(origin) && originAgrees) return TIER_EXTENSION_PAGE;
  // Content scripts run in web pages, so they always come with a tab.
  if (sender.tab && !url.startsWith(origin)) return TIER_CONTENT_SCRIPT;
  return TIER_UNTRUSTED;
}

function lookup(table, key) {
  // Own properties only: "constructor" or "__proto__" are not message types.
  return typeof key === 'string' && Object.hasOwn(table, key) ? table[key] : undefined;
}

/**
 * @param {object} routes
 * @param {Record<string, {tiers: string[], handle: (message, sender) => any}>} routes.messages
 * @param {Record<string, {tiers: string[], open: (port) => void}>} routes.ports
 */
export function createDispatcher({ messages, ports }, { runtimeId, origin, logger = console }) {
  const context = { runtimeId, origin };

  async function dispatch(message, sender) {
    const type = message?.type;
    const route = lookup(messages, type);
    if (!route) return { ok: false, error: { reason: 'unknown_type', message: `unknown message type ${JSON.stringify(type)}` } };
    const tier = senderTier(sender, context);
    if (!route.tiers.includes(tier)) {
      logger.warn(`ferry: refused ${type} from ${tier} sender`, sender?.url);
      return { ok: false, error: { reason: 'forbidden', message: `${type} is not allowed from ${tier}` } };
    }
    try {
      return { ok: true, result: await route.handle(message, sender) };
    } catch (err) {
      return { ok: false, error: serializeError(err) };
    }
  }

  function acceptPort(port) {
    const route = lookup(ports, port.name);
    const tier = senderTier(port.sender, context);
    if (!route || !route.tiers.includes(tier)) {
      logger.warn(`ferry: refused port ${JSON.stringify(port.name)} from ${tier} sender`);
      port.disconnect();
      return false;
    }
    route.open(port);
    return true;
  }

  return { dispatch, acceptPort };
}
