// The client of the Ferry host: owns the one native port, speaks JSON-RPC 2.0
// over it (protocol/PROTOCOL.md), and keeps a small observable state machine:
//
//   disconnected ──connect──▶ connecting ──hello ok──▶ connected
//        ▲                        │  │                     │
//        └──── port gone / hello failed (backoff) ◀────────┘
//                                 └──hello -32000──▶ incompatible (until retry)
//
// Nothing here touches `chrome.*`: the port comes from `openPort`, time from
// `timers`, so tests drive it with fakes.

import { createBackoff } from './backoff.js';
import { CHUNK_METHOD, createChunkAssembler } from './chunks.js';
import { HostError, RPC, disconnectError, rpcError, toRpcError } from './host-errors.js';

export const HOST_NAME = 'ferry_host';
export const PROTOCOL_VERSION = 1;
export const CLIENT_NAME = 'ferry-extension';
export const DEFAULT_TIMEOUT_MS = 30_000;
export const ERROR_PROTOCOL_MISMATCH = RPC.PROTOCOL_MISMATCH;
export const ERROR_METHOD_NOT_FOUND = RPC.METHOD_NOT_FOUND;

/**
 * @param {object} opts
 * @param {(hostName: string, handlers: {onMessage: Function, onDisconnect: (browserMessage: string) => void})
 *          => {post: (message: object) => void, close: () => void}} opts.openPort
 * @param {string} [opts.clientVersion]  the extension's manifest version
 */
export function createHostClient({
  openPort,
  clientVersion = '0.0.0',
  hostName = HOST_NAME,
  timers = globalThis,
  logger = console,
  defaultTimeout = DEFAULT_TIMEOUT_MS,
  helloTimeout = 10_000,
  backoff = createBackoff(),
  chunkTimeout,
}) {
  let state = 'disconnected';
  let lastError = null; // {reason, message}
  let hostInfo = null; // the host.hello result while connected
  let conn = null; // {port, ready, queue}; ready once hello succeeded
  let nextId = 1;
  let reconnectTimer = null;
  const pending = new Map(); // id → {method, resolve, reject, timer}
  const stateListeners = new Set();
  const notificationListeners = new Map(); // method or "*" → Set<fn>
  const handlers = new Map();
  const chunks = createChunkAssembler({
    timers,
    logger,
    timeoutMs: chunkTimeout,
    onMessage: (message) => handleMessage(message, true),
  });

  function snapshot() {
    return { state, lastError: lastError && { ...lastError }, hostInfo };
  }

  function setState(next) {
    state = next;
    const snap = snapshot();
    for (const fn of [...stateListeners]) {
      try {
        fn(snap);
      } catch (err) {
        logger.error('ferry: state listener failed', err);
      }
    }
  }

  function connect() {
    if (state === 'connecting' || state === 'connected') return;
    cancelReconnect();
    const c = { port: null, ready: false, queue: [] };
    conn = c;
    setState('connecting');
    try {
      c.port = openPort(hostName, {
        // Events of a port we already gave up on must not touch the new one.
        onMessage: (message) => conn === c && handleMessage(message, false),
        onDisconnect: (browserMessage) => conn === c && fail(c, disconnectError(browserMessage), true),
      });
    } catch (err) {
      fail(c, new HostError(`Could not start the Ferry host: ${err?.message ?? err}`, { reason: 'disconnected' }), true);
      return;
    }
    sendHello(c);
  }

  function sendHello(c) {
    if (conn !== c) return;
    const id = nextId++;
    const done = track(id, 'host.hello', helloTimeout);
    post(c, {
      jsonrpc: '2.0',
      id,
      method: 'host.hello',
      params: { protocol: PROTOCOL_VERSION, client: CLIENT_NAME, client_version: clientVersion },
    });
    done.then((info) => onHello(c, info), (err) => onHelloFailed(c, err));
  }

  function onHello(c, info) {
    if (conn !== c) return;
    if (info?.protocol !== PROTOCOL_VERSION) {
      const message = `The Ferry host speaks protocol ${info?.protocol} but this extension speaks protocol ${PROTOCOL_VERSION}. Update the older of the two.`;
      fail(c, new HostError(message, { reason: 'incompatible', code: ERROR_PROTOCOL_MISMATCH }), false);
      return;
    }
    c.ready = true;
    hostInfo = info;
    lastError = null;
    backoff.reset();
    setState('connected');
    const queued = c.queue;
    c.queue = [];
    for (const { id, message } of queued) {
      if (pending.has(id)) post(c, message);
    }
  }

  function onHelloFailed(c, err) {
    if (conn !== c) return;
    if (err.code === ERROR_PROTOCOL_MISMATCH) {
      // The host's message says which side to update; show it as is, and
      // do not reconnect: a new process would say the same.
      fail(c, new HostError(err.message, { reason: 'incompatible', code: err.code, data: err.data }), false);
      return;
    }
    const reason = err.reason === 'timeout' ? 'hello_timeout' : 'hello_failed';
    fail(c, new HostError(`The Ferry host did not complete the handshake: ${err.message}`, { reason, code: err.code }), true);
  }

  /** Ends connection `c`: state first, so rejection handlers see it. */
  function fail(c, error, reconnect) {
    if (conn !== c) return;
    conn = null;
    try {
      c.port?.close();
    } catch {
      // Already gone; nothing to release.
    }
    chunks.reset();
    hostInfo = null;
    lastError = { reason: error.reason, message: error.message };
    setState(error.reason === 'incompatible' ? 'incompatible' : 'disconnected');
    rejectAll(error);
    if (reconnect) scheduleReconnect();
  }

  function rejectAll(error) {
    const calls = [...pending.values()];
    pending.clear();
    for (const call of calls) {
      timers.clearTimeout(call.timer);
      // One Error per call: callers may annotate what they receive.
      call.reject(new HostError(error.message, { reason: error.reason, code: error.code, data: error.data }));
    }
  }

  function scheduleReconnect() {
    cancelReconnect();
    reconnectTimer = timers.setTimeout(() => {
      reconnectTimer = null;
      connect();
    }, backoff.next());
  }

  function cancelReconnect() {
    if (reconnectTimer !== null) timers.clearTimeout(reconnectTimer);
    reconnectTimer = null;
  }

  function track(id, method, timeout) {
    return new Promise((resolve, reject) => {
      let timer = null;
      if (timeout !== Infinity) {
        timer = timers.setTimeout(() => {
          pending.delete(id);
          if (conn) conn.queue = conn.queue.filter((q) => q.id !== id);
          reject(new HostError(`${method} timed out after ${timeout} ms`, { reason: 'timeout' }));
        }, timeout);
      }
      pending.set(id, { method, resolve, reject, timer });
    });
  }

  function post(c, message) {
    try {
      c.port.post(message);
    } catch (err) {
      const call = message.method !== undefined ? pending.get(message.id) : undefined;
      if (call) {
        pending.delete(message.id);
        timers.clearTimeout(call.timer);
        call.reject(new HostError(`Could not send ${message.method} to the Ferry host: ${err?.message ?? err}`, { reason: 'send_failed' }));
      } else {
        logger.error('ferry: could not send a message to the host', err);
      }
    }
  }

  function handleMessage(message, reassembled) {
    if (message === null || typeof message !== 'object' || Array.isArray(message) || message.jsonrpc !== '2.0') {
      logger.error('ferry: ignored a host message that is not a JSON-RPC 2.0 object', message);
      return;
    }
    if (typeof message.method === 'string') {
      if (message.method === CHUNK_METHOD) {
        if (reassembled) logger.error('ferry: ignored a chunk frame nested inside a chunked message');
        else chunks.accept(message.params);
      } else if (message.id !== undefined) {
        handleHostRequest(conn, message);
      } else {
        notify(message.method, message.params);
      }
      return;
    }
    if (message.id === undefined) {
      logger.error('ferry: ignored a host message with neither method nor id', message);
      return;
    }
    const call = pending.get(message.id);
    if (!call) {
      // Usually the answer to a call that already timed out.
      logger.warn(`ferry: ignored a response for unknown id ${JSON.stringify(message.id)}`);
      return;
    }
    pending.delete(message.id);
    timers.clearTimeout(call.timer);
    if (message.error !== undefined && message.error !== null) call.reject(rpcError(message.error));
    else if ('result' in message) call.resolve(message.result);
    else call.reject(new HostError(`Invalid response to ${call.method}: neither result nor error`, { reason: 'protocol_error' }));
  }

  async function handleHostRequest(c, message) {
    const { id, method, params } = message;
    const handler = handlers.get(method);
    let reply;
    if (!handler) {
      reply = { jsonrpc: '2.0', id, error: { code: ERROR_METHOD_NOT_FOUND, message: `method not found: ${method}` } };
    } else {
      try {
        const result = await handler(params, { method, id });
        reply = { jsonrpc: '2.0', id, result: result === undefined ? null : result };
      } catch (err) {
        reply = { jsonrpc: '2.0', id, error: toRpcError(err) };
      }
    }
    // The host that asked is gone if the connection changed meanwhile.
    if (c && conn === c) post(c, reply);
  }

  function notify(method, params) {
    for (const key of [method, '*']) {
      const set = notificationListeners.get(key);
      if (!set) continue;
      for (const fn of [...set]) {
        try {
          fn(params, method);
        } catch (err) {
          logger.error(`ferry: listener for ${method} failed`, err);
        }
      }
    }
  }

  function incompatibleError() {
    return new HostError(lastError?.message ?? 'The Ferry host is incompatible with this extension.', { reason: 'incompatible', code: ERROR_PROTOCOL_MISMATCH });
  }

  return {
    /**
     * Calls a host method. Connects first when needed (immediately, not at
     * the next backoff tick) and waits for the hello before sending.
     */
    request(method, params, { timeout = defaultTimeout } = {}) {
      if (typeof method !== 'string' || method === '') {
        return Promise.reject(new TypeError('method must be a non-empty string'));
      }
      if (timeout !== Infinity && !(Number.isFinite(timeout) && timeout > 0)) {
        return Promise.reject(new TypeError('timeout must be a positive number of milliseconds or Infinity'));
      }
      if (state === 'incompatible') return Promise.reject(incompatibleError());
      if (!conn) connect();
      const c = conn;
      if (!c) {
        return Promise.reject(new HostError(lastError?.message ?? 'Not connected to the Ferry host.', { reason: lastError?.reason ?? 'disconnected' }));
      }
      const id = nextId++;
      const message = { jsonrpc: '2.0', id, method };
      if (params !== undefined) message.params = params;
      const result = track(id, method, timeout);
      if (c.ready) post(c, message);
      else c.queue.push({ id, message });
      return result;
    },

    /** A notification to the host (no id, no answer). Dropped while not connected. */
    notify(method, params) {
      if (!conn?.ready) return false;
      const message = { jsonrpc: '2.0', method };
      if (params !== undefined) message.params = params;
      post(conn, message);
      return true;
    },

    /** fn(params, method) for host notifications of `method`, or of all with "*". */
    onNotification(method, fn) {
      let set = notificationListeners.get(method);
      if (!set) notificationListeners.set(method, (set = new Set()));
      set.add(fn);
      return () => set.delete(fn);
    },

    /** Answers host → extension requests of `method`; one handler per method. */
    registerHandler(method, fn) {
      if (typeof fn !== 'function') throw new TypeError(`handler for ${method} must be a function`);
      if (handlers.has(method)) throw new Error(`a handler for ${method} is already registered`);
      handlers.set(method, fn);
      return () => {
        if (handlers.get(method) === fn) handlers.delete(method);
      };
    },

    /** fn({state, lastError, hostInfo}) on every state change. */
    subscribe(fn) {
      stateListeners.add(fn);
      return () => stateListeners.delete(fn);
    },

    snapshot,
    get state() {
      return state;
    },
    get lastError() {
      return lastError && { ...lastError };
    },
    get hostInfo() {
      return hostInfo;
    },

    /** Starts connecting now unless already connected or connecting. */
    connect() {
      if (state !== 'incompatible') connect();
    },

    /** A person asked to try again: also leaves "incompatible" (they may have updated). */
    retry() {
      backoff.reset();
      connect();
    },

    /** Closes the port and stops reconnecting; pending calls are rejected. */
    close() {
      cancelReconnect();
      if (conn) fail(conn, new HostError('The host client was closed.', { reason: 'closed' }), false);
      else setState('disconnected');
    },
  };
}
