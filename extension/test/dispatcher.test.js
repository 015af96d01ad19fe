import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  TIER_CONTENT_SCRIPT,
  TIER_EXTENSION_PAGE,
  TIER_UNTRUSTED,
  createDispatcher,
  senderTier,
} from '../background/dispatcher.js';
import { STATUS_PORT, createRoutes } from '../background/routes.js';
import { HostError } from '../lib/host-errors.js';
import { recordingLogger } from '../testing/fakes.js';

const ID = 'hbkoapgnaiamicpgipblnghgmidgcmoc';
const ORIGIN = `chrome-extension://${ID}/`;
const context = { runtimeId: ID, origin: ORIGIN };

const senders = {
  optionsTab: { id: ID, url: `${ORIGIN}options/options.html`, origin: ORIGIN.slice(0, -1), tab: { id: 4 }, frameId: 0 },
  sidePanel: { id: ID, url: `${ORIGIN}sidepanel/panel.html` },
  contentScript: { id: ID, url: 'https://shop.example/cart', origin: 'https://shop.example', tab: { id: 9 }, frameId: 0 },
  otherExtension: { id: 'abcdefghijklmnopabcdefghijklmnop', url: 'chrome-extension://abcdefghijklmnopabcdefghijklmnop/x.html' },
  lookalike: { id: ID, url: `${ORIGIN}options.html`, origin: 'https://evil.example' },
  noUrl: { id: ID },
};

/** A stand-in for the host client that records what it is asked. */
function fakeClient(state = 'connected') {
  const calls = [];
  const listeners = new Set();
  const client = {
    calls,
    state,
    snapshot: () => ({ state: client.state, lastError: null, hostInfo: { version: '0.1.0' } }),
    request: async (method, params, opts) => {
      calls.push(['request', method, params, opts]);
      if (method === 'fail') throw new HostError('nope', { reason: 'rpc_error', code: -32602, data: { x: 1 } });
      return { answered: method };
    },
    retry: () => calls.push(['retry']),
    connect: () => calls.push(['connect']),
    subscribe: (fn) => {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    emit: (snap) => listeners.forEach((fn) => fn(snap)),
    listeners,
  };
  return client;
}

function setup(state) {
  const client = fakeClient(state);
  const { logger, calls: logs } = recordingLogger();
  const dispatcher = createDispatcher(createRoutes(client), { ...context, logger });
  return { client, dispatcher, logs };
}

function fakePort(name, sender) {
  const port = { name, sender, posted: [], disconnected: false, closeFns: [] };
  port.post = (m) => port.posted.push(m);
  port.onDisconnect = (fn) => port.closeFns.push(fn);
  port.disconnect = () => {
    port.disconnected = true;
  };
  port.closeFromPage = () => port.closeFns.forEach((fn) => fn(''));
  return port;
}

describe('senderTier', () => {
  const expected = {
    optionsTab: TIER_EXTENSION_PAGE,
    sidePanel: TIER_EXTENSION_PAGE,
    contentScript: TIER_CONTENT_SCRIPT,
    otherExtension: TIER_UNTRUSTED,
    lookalike: TIER_UNTRUSTED,
    noUrl: TIER_UNTRUSTED,
  };
  for (const [name, tier] of Object.entries(expected)) {
    it(`classifies ${name} as ${tier}`, () => {
      assert.equal(senderTier(senders[name], context), tier);
    });
  }
  it('classifies a missing sender as untrusted', () => {
    assert.equal(senderTier(undefined, context), TIER_UNTRUSTED);
  });
});

describe('dispatcher', () => {
  it('lets extension pages call host methods', async () => {
    const { client, dispatcher } = setup();
    const reply = await dispatcher.dispatch({ type: 'host.request', method: 'host.info', params: { a: 1 }, timeout: 5000 }, senders.optionsTab);
    assert.deepEqual(reply, { ok: true, result: { answered: 'host.info' } });
    assert.deepEqual(client.calls, [['request', 'host.info', { a: 1 }, { timeout: 5000 }]]);
  });

  it('keeps content scripts, other extensions and unknown senders away from every host message', async () => {
    const { client, dispatcher } = setup();
    for (const sender of [senders.contentScript, senders.otherExtension, senders.lookalike, senders.noUrl]) {
      for (const message of [{ type: 'host.request', method: 'tools.call', params: {} }, { type: 'host.status' }, { type: 'host.retry' }]) {
        const reply = await dispatcher.dispatch(message, sender);
        assert.equal(reply.ok, false, `${message.type} from ${sender.url}`);
        assert.equal(reply.error.reason, 'forbidden');
      }
    }
    assert.deepEqual(client.calls, [], 'the client was never reached');
  });

  it('grants no content-script or untrusted access to any host.* message in the table', () => {
    const routes = createRoutes(fakeClient());
    for (const [type, route] of [...Object.entries(routes.messages), ...Object.entries(routes.ports)]) {
      assert.ok(Array.isArray(route.tiers) && route.tiers.length > 0, `${type} lists its tiers`);
      assert.ok(!route.tiers.includes(TIER_UNTRUSTED), `${type} is not open to untrusted senders`);
      if (type.startsWith('host')) assert.ok(!route.tiers.includes(TIER_CONTENT_SCRIPT), `${type} is closed to content scripts`);
    }
  });

  it('answers unknown and prototype-named types as unknown', async () => {
    const { dispatcher } = setup();
    for (const type of ['nope', 'constructor', '__proto__', 'toString', undefined, 42]) {
      const reply = await dispatcher.dispatch({ type }, senders.optionsTab);
      assert.equal(reply.ok, false);
      assert.equal(reply.error.reason, 'unknown_type', String(type));
    }
    assert.equal((await dispatcher.dispatch(null, senders.optionsTab)).error.reason, 'unknown_type');
  });

  it('passes host errors back as plain objects with reason, code and data', async () => {
    const { dispatcher } = setup();
    const reply = await dispatcher.dispatch({ type: 'host.request', method: 'fail' }, senders.optionsTab);
    assert.deepEqual(reply, { ok: false, error: { message: 'nope', reason: 'rpc_error', code: -32602, data: { x: 1 } } });
  });

  it('returns the status snapshot and performs retries for pages', async () => {
    const { client, dispatcher } = setup();
    assert.deepEqual((await dispatcher.dispatch({ type: 'host.status' }, senders.sidePanel)).result.state, 'connected');
    await dispatcher.dispatch({ type: 'host.retry' }, senders.sidePanel);
    assert.deepEqual(client.calls, [['retry']]);
  });
});

describe('status port', () => {
  it('pushes the current state, then every change, until the page goes away', () => {
    const { client, dispatcher } = setup();
    const port = fakePort(STATUS_PORT, senders.optionsTab);
    assert.equal(dispatcher.acceptPort(port), true);
    assert.equal(port.posted.length, 1);
    assert.equal(port.posted[0].state, 'connected');
    client.emit({ state: 'disconnected' });
    assert.deepEqual(port.posted.at(-1), { state: 'disconnected' });
    port.closeFromPage();
    assert.equal(client.listeners.size, 0, 'unsubscribed on disconnect');
  });

  it('starts connecting when a page watches a disconnected client', () => {
    const { client, dispatcher } = setup('disconnected');
    dispatcher.acceptPort(fakePort(STATUS_PORT, senders.optionsTab));
    assert.deepEqual(client.calls, [['connect']]);
  });

  it('refuses the port to content scripts and unknown port names', () => {
    const { client, dispatcher } = setup();
    const fromContent = fakePort(STATUS_PORT, senders.contentScript);
    const unknown = fakePort('whatever', senders.optionsTab);
    assert.equal(dispatcher.acceptPort(fromContent), false);
    assert.equal(dispatcher.acceptPort(unknown), false);
    assert.equal(fromContent.disconnected, true);
    assert.equal(unknown.disconnected, true);
    assert.deepEqual(fromContent.posted, []);
    assert.equal(client.listeners.size, 0);
  });
});
