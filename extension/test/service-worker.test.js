// Loads the real service worker (and so lib/chrome-api.js) against a fake
// `chrome` global, the way Chrome would: one import, listeners expected to be
// in place when it returns.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flush } from '../testing/fakes.js';

const ID = 'hbkoapgnaiamicpgipblnghgmidgcmoc';
const ORIGIN = `chrome-extension://${ID}/`;

function event() {
  const listeners = [];
  return { listeners, addListener: (fn) => listeners.push(fn) };
}

function fakeChrome() {
  const nativePorts = [];
  const chrome = {
    runtime: {
      id: ID,
      lastError: undefined,
      getURL: (path) => ORIGIN + path,
      getManifest: () => ({ version: '0.1.0' }),
      onMessage: event(),
      onConnect: event(),
      openOptionsPage: () => {
        chrome.openedOptions = (chrome.openedOptions ?? 0) + 1;
      },
      connectNative(name) {
        const port = { name, sent: [], onMessage: event(), onDisconnect: event() };
        port.postMessage = (m) => port.sent.push(structuredClone(m));
        port.disconnect = () => {};
        // Chrome sets lastError only while the disconnect event runs.
        port.browserDrop = (message) => {
          chrome.runtime.lastError = { message };
          for (const fn of port.onDisconnect.listeners) fn(port);
          chrome.runtime.lastError = undefined;
        };
        port.hostSends = (m) => port.onMessage.listeners.forEach((fn) => fn(m, port));
        nativePorts.push(port);
        return port;
      },
    },
    action: { onClicked: event() },
    tabs: { onRemoved: event(), onUpdated: event() },
    i18n: { getMessage: (key) => key, getUILanguage: () => 'en' },
    storage: { local: {}, onChanged: event() },
  };
  return { chrome, nativePorts };
}

/** Calls the registered onMessage listener the way Chrome does and awaits sendResponse. */
function sendRuntimeMessage(chrome, message, sender) {
  return new Promise((resolve) => {
    const [listener] = chrome.runtime.onMessage.listeners;
    const keepOpen = listener(message, sender, resolve);
    assert.equal(keepOpen, true, 'the listener keeps the channel open for its async answer');
  });
}

describe('service worker', () => {
  let fake;
  const realSetTimeout = globalThis.setTimeout;
  const timers = new Set();
  after(() => {
    globalThis.setTimeout = () => 0;
    for (const timer of timers) clearTimeout(timer);
  });
  before(async () => {
    // The worker reconnects forever with real timers; remember them so that
    // after() can stop the loop and let this file end.
    globalThis.setTimeout = (fn, ms, ...args) => {
      const timer = realSetTimeout(fn, ms, ...args);
      timers.add(timer);
      return timer;
    };
    fake = fakeChrome();
    globalThis.chrome = fake.chrome;
    await import('../background/service-worker.js');
  });

  it('registers its listeners during the first evaluation', () => {
    assert.equal(fake.chrome.runtime.onMessage.listeners.length, 1);
    assert.equal(fake.chrome.runtime.onConnect.listeners.length, 1);
    assert.equal(fake.chrome.action.onClicked.listeners.length, 1);
    assert.equal(fake.nativePorts.length, 0, 'no host process until something needs it');
  });

  it('exposes ferryHost with request and state', () => {
    assert.deepEqual(Object.keys(globalThis.ferryHost).sort(), ['request', 'state']);
    assert.ok(Object.isFrozen(globalThis.ferryHost));
    assert.deepEqual(globalThis.ferryHost.state(), { state: 'disconnected', lastError: null, hostInfo: null });
  });

  it('drives the host through ferryHost.request', async () => {
    const pending = globalThis.ferryHost.request('host.info');
    const port = fake.nativePorts.at(-1);
    assert.equal(port.name, 'ferry_host');
    assert.deepEqual(port.sent[0].params, { protocol: 1, client: 'ferry-extension', client_version: '0.1.0' });
    port.hostSends({ jsonrpc: '2.0', id: port.sent[0].id, result: { name: 'ferry', version: '0.1.0', protocol: 1 } });
    await flush();
    // On connecting the side panels' count goes first (ui.presence, no panel open).
    assert.deepEqual(port.sent.filter((m) => m.method === 'ui.presence').map((m) => m.params), [{ panels: 0 }]);
    const info = port.sent.find((m) => m.method === 'host.info');
    assert.ok(info, 'host.info sent');
    port.hostSends({ jsonrpc: '2.0', id: info.id, result: { data_dir: '/d' } });
    assert.deepEqual(await pending, { data_dir: '/d' });
    assert.equal(globalThis.ferryHost.state().state, 'connected');
  });

  it('honours the timeout argument of ferryHost.request', async () => {
    await assert.rejects(globalThis.ferryHost.request('host.ping', {}, 5), (err) => err.reason === 'timeout' && /5 ms/.test(err.message));
  });

  it('answers extension pages and refuses content scripts', async () => {
    const page = { id: ID, url: `${ORIGIN}options/options.html`, tab: { id: 1 } };
    const content = { id: ID, url: 'https://example.com/', tab: { id: 2 }, frameId: 0 };
    const status = await sendRuntimeMessage(fake.chrome, { type: 'host.status' }, page);
    assert.equal(status.ok, true);
    assert.equal(status.result.state, 'connected');
    const refused = await sendRuntimeMessage(fake.chrome, { type: 'host.request', method: 'host.info' }, content);
    assert.deepEqual(refused.ok, false);
    assert.equal(refused.error.reason, 'forbidden');
  });

  it('reads chrome.runtime.lastError inside the disconnect event', async () => {
    const call = globalThis.ferryHost.request('host.ping', {}, 60_000);
    fake.nativePorts.at(-1).browserDrop('Access to the specified native messaging host is forbidden.');
    await assert.rejects(call, (err) => err.reason === 'forbidden');
    assert.equal(globalThis.ferryHost.state().lastError.reason, 'forbidden');
  });

  it('opens the options page from the toolbar button', () => {
    fake.chrome.action.onClicked.listeners[0]({ id: 3 });
    assert.equal(fake.chrome.openedOptions, 1);
  });
});
