// Test doubles shared by extension/test/*. Kept outside test/ because
// `node --test extension/test/` would otherwise run this file as a test.

/** Manual clock: nothing fires until advance() is called. */
export class FakeTimers {
  now = 0;
  #nextId = 1;
  #timers = new Map();

  setTimeout = (fn, ms = 0) => {
    const id = this.#nextId++;
    this.#timers.set(id, { at: this.now + Math.max(0, ms), fn });
    return id;
  };

  clearTimeout = (id) => {
    this.#timers.delete(id);
  };

  /** Runs every timer due within `ms`, in due order, timers they set included. */
  advance(ms) {
    const end = this.now + ms;
    for (;;) {
      let dueId = null;
      let due = null;
      for (const [id, timer] of this.#timers) {
        if (timer.at <= end && (due === null || timer.at < due.at)) {
          dueId = id;
          due = timer;
        }
      }
      if (due === null) break;
      this.#timers.delete(dueId);
      this.now = due.at;
      due.fn();
    }
    this.now = end;
  }

  get pendingCount() {
    return this.#timers.size;
  }
}

/** A port factory standing in for chrome.runtime.connectNative. */
export function fakeNativePorts() {
  const ports = [];
  function openPort(hostName, { onMessage, onDisconnect }) {
    const port = {
      hostName,
      sent: [],
      closed: false,
      post(message) {
        if (port.closed) throw new Error('Attempting to use a disconnected port object');
        // Chrome serialises on postMessage; a clone catches later mutation.
        port.sent.push(structuredClone(message));
      },
      close() {
        port.closed = true;
      },
      /** The host sends a message to the extension. */
      deliver(message) {
        onMessage(structuredClone(message));
      },
      /** The browser drops the port, with its lastError text. */
      drop(browserMessage) {
        port.closed = true;
        onDisconnect(browserMessage);
      },
      sentRequest(method) {
        return port.sent.find((m) => m.method === method);
      },
    };
    ports.push(port);
    return port;
  }
  return {
    openPort,
    ports,
    get last() {
      return ports.at(-1);
    },
  };
}

/** Records console-like calls instead of printing them. */
export function recordingLogger() {
  const calls = { error: [], warn: [], info: [], log: [] };
  const logger = {};
  for (const level of Object.keys(calls)) logger[level] = (...args) => calls[level].push(args.join(' '));
  return { logger, calls };
}

/** Lets pending promise callbacks run. */
export function flush() {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Settles-state probe for a promise without awaiting it. */
export function track(promise) {
  const probe = { settled: false, value: undefined, error: undefined };
  promise.then(
    (value) => Object.assign(probe, { settled: true, value }),
    (error) => Object.assign(probe, { settled: true, error }),
  );
  return probe;
}
