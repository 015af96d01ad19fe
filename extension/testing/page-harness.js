// The page API (page/ferry-main.js) in a vm context with a fake window, and the
// service worker's side of page actions with a fake host: shared by the page-action
// tests of extension/test/.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const ext = join(dirname(fileURLToPath(import.meta.url)), '..');
export const pageSource = readFileSync(join(ext, 'page', 'ferry-main.js'), 'utf8');

// The names the bridge hands over with the handshake (lib/wire-names.js, loaded apart as
// the extension does: never in the page's world).
export const wire = (() => {
  const c = vm.createContext({});
  vm.runInContext(readFileSync(join(ext, 'lib', 'wire-names.js'), 'utf8'), c);
  return JSON.parse(JSON.stringify(vm.runInContext('globalThis.FerryWire', c)));
})();

export const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));

/**
 * Loads the page API. With handshake (the default) the bridge's handshake is
 * delivered at once on a fake port; otherwise call handshake(port, source) yourself.
 */
export function loadPageAPI({ handshake: auto = true } = {}) {
  const listeners = [];
  const document = { documentElement: null, title: 'T', addEventListener() {}, querySelector: () => null };
  const ctx = vm.createContext({ setTimeout, clearTimeout, setInterval, clearInterval, console, CustomEvent: class {}, JSON, Symbol, Object, Promise, Error, TypeError, RegExp, Array, Map, Set, Number, String, Boolean, performance });
  Object.assign(ctx, {
    document,
    addEventListener: (type, fn) => listeners.push({ type, fn }),
    removeEventListener: (type, fn) => { const i = listeners.findIndex((l) => l.fn === fn); if (i >= 0) listeners.splice(i, 1); },
    dispatchEvent() {},
  });
  ctx.globalThis = ctx;
  ctx.window = ctx;
  vm.runInContext(pageSource, ctx);
  const self = vm.runInContext('globalThis', ctx); // the window as the script sees it
  const handshake = (port, source = self) => {
    let stopped = false;
    const ev = { source, data: { type: wire.HANDSHAKE, wire }, ports: [port], stopImmediatePropagation: () => { stopped = true; } };
    for (const l of [...listeners]) if (l.type === 'message') l.fn(ev);
    return stopped;
  };
  const port = fakeMessagePort();
  if (auto) handshake(port);
  const fromBridge = (data) => port.onmessage({ data });
  // Sends a request the page answers with done, and returns its out.
  const answer = async (msg) => {
    fromBridge({ rid: 77, ...msg });
    await tick();
    return port.sent.findLast((m) => m.t === 'done' && m.rid === 77)?.out;
  };
  return { ferry: self.ferry, self, port, handshake, fromBridge, answer };
}

/** One end of a MessageChannel that records what it is sent. */
export function fakeMessagePort() {
  return { sent: [], postMessage(m) { this.sent.push(JSON.parse(JSON.stringify(m))); }, onmessage: null };
}

/** The host client as background/pageactions.js uses it, answering from a table. */
export function fakeClient(answers) {
  const requests = [];
  return {
    state: 'connected',
    requests,
    async request(method, params) {
      requests.push({ method, params });
      const a = answers[method];
      if (a instanceof Error) throw a;
      return typeof a === 'function' ? a(params) : a;
    },
    notify() {}, connect() {}, registerHandler() {}, subscribe() {},
  };
}

/** A bridge's runtime port as the service worker sees it. */
export function fakeSWPort(sender) {
  const posted = [];
  let onMsg = null;
  return { sender, posted, post: (m) => posted.push(m), onMessage: (fn) => { onMsg = fn; }, onDisconnect: () => {}, disconnect() {}, send: (m) => onMsg(m) };
}
