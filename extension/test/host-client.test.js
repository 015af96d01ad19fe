import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHostClient } from '../lib/host-client.js';
import { FakeTimers, fakeNativePorts, flush, recordingLogger, track } from '../testing/fakes.js';

const HELLO_RESULT = { name: 'ferry', version: '0.1.0', protocol: 1 };

function setup(opts = {}) {
  const timers = new FakeTimers();
  const native = fakeNativePorts();
  const { logger, calls } = recordingLogger();
  const client = createHostClient({ openPort: native.openPort, clientVersion: '9.8.7', timers, logger, ...opts });
  return { client, timers, native, calls };
}

function answerHello(port, result = HELLO_RESULT) {
  const hello = port.sentRequest('host.hello');
  port.deliver({ jsonrpc: '2.0', id: hello.id, result });
}

async function connected(opts) {
  const ctx = setup(opts);
  ctx.client.connect();
  answerHello(ctx.native.last);
  await flush();
  assert.equal(ctx.client.state, 'connected');
  return { ...ctx, port: ctx.native.last };
}

function lastRequest(port) {
  return port.sent.at(-1);
}

describe('host client: connecting', () => {
  it('opens no port until the first request, then opens "ferry_host"', () => {
    const { client, native } = setup();
    assert.equal(native.ports.length, 0);
    assert.equal(client.state, 'disconnected');
    client.request('host.info');
    assert.equal(native.ports.length, 1);
    assert.equal(native.last.hostName, 'ferry_host');
    assert.equal(client.state, 'connecting');
  });

  it('sends host.hello first and holds requests until it succeeds', async () => {
    const { client, native } = setup();
    const info = track(client.request('host.info', { verbose: true }));
    const port = native.last;
    assert.equal(port.sent.length, 1, 'only the hello goes out before the hello answer');
    assert.deepEqual(port.sent[0].params, { protocol: 1, client: 'ferry-extension', client_version: '9.8.7' });
    assert.equal(port.sent[0].method, 'host.hello');
    assert.equal(port.sent[0].jsonrpc, '2.0');

    answerHello(port);
    await flush();
    assert.equal(port.sent.length, 2);
    const sent = port.sent[1];
    assert.deepEqual({ method: sent.method, params: sent.params }, { method: 'host.info', params: { verbose: true } });
    assert.equal(info.settled, false);

    port.deliver({ jsonrpc: '2.0', id: sent.id, result: { version: '0.1.0' } });
    await flush();
    assert.deepEqual(info.value, { version: '0.1.0' });
    assert.deepEqual(client.hostInfo, HELLO_RESULT);
  });

  it('reports state changes to subscribers, and stops after unsubscribe', async () => {
    const { client, native } = setup();
    const seen = [];
    const unsubscribe = client.subscribe((snap) => seen.push(snap.state));
    client.connect();
    answerHello(native.last);
    await flush();
    native.last.drop('Native host has exited.');
    unsubscribe();
    client.connect();
    assert.deepEqual(seen, ['connecting', 'connected', 'disconnected']);
    assert.equal(client.state, 'connecting');
  });

  it('omits params when none are given', async () => {
    const { client, port } = await connected();
    client.request('host.info');
    assert.equal('params' in lastRequest(port), false);
  });
});

describe('host client: responses', () => {
  it('matches responses arriving out of order to their calls', async () => {
    const { client, port } = await connected();
    const a = track(client.request('host.ping', { payload: 'a' }));
    const b = track(client.request('host.ping', { payload: 'b' }));
    const c = track(client.request('host.ping', { payload: 'c' }));
    const [ida, idb, idc] = port.sent.slice(-3).map((m) => m.id);
    assert.equal(new Set([ida, idb, idc]).size, 3, 'ids are unique');
    port.deliver({ jsonrpc: '2.0', id: idc, result: 'C' });
    port.deliver({ jsonrpc: '2.0', id: ida, result: 'A' });
    port.deliver({ jsonrpc: '2.0', id: idb, result: 'B' });
    await flush();
    assert.deepEqual([a.value, b.value, c.value], ['A', 'B', 'C']);
  });

  it('rejects JSON-RPC errors with code, data and message', async () => {
    const { client, port } = await connected();
    const call = track(client.request('tools.call', { name: 'x' }));
    port.deliver({ jsonrpc: '2.0', id: lastRequest(port).id, error: { code: -32602, message: 'arguments missing', data: { field: 'name' } } });
    await flush();
    assert.ok(call.error instanceof Error);
    assert.equal(call.error.message, 'arguments missing');
    assert.equal(call.error.code, -32602);
    assert.deepEqual(call.error.data, { field: 'name' });
    assert.equal(call.error.reason, 'rpc_error');
  });

  it('times out a call after its own timeout and forgets its id', async () => {
    const { client, port, timers, calls } = await connected();
    const call = track(client.request('host.ping', {}, { timeout: 100 }));
    const { id } = lastRequest(port);
    timers.advance(99);
    await flush();
    assert.equal(call.settled, false);
    timers.advance(1);
    await flush();
    assert.equal(call.error.reason, 'timeout');
    assert.match(call.error.message, /host\.ping timed out after 100 ms/);
    // The late answer must not throw or resolve anything.
    port.deliver({ jsonrpc: '2.0', id, result: 'late' });
    assert.match(calls.warn.at(-1), /unknown id/);
  });

  it('uses a 30 s timeout by default', async () => {
    const { client, timers } = await connected();
    const call = track(client.request('host.ping'));
    timers.advance(29_999);
    await flush();
    assert.equal(call.settled, false);
    timers.advance(1);
    await flush();
    assert.equal(call.error.reason, 'timeout');
  });

  it('does not send a call that timed out while waiting for the hello', async () => {
    const { client, native, timers } = setup();
    const call = track(client.request('host.info', undefined, { timeout: 50 }));
    timers.advance(50);
    await flush();
    assert.equal(call.error.reason, 'timeout');
    answerHello(native.last);
    await flush();
    assert.deepEqual(native.last.sent.map((m) => m.method), ['host.hello']);
  });

  it('rejects invalid arguments without sending anything', async () => {
    const { client, port } = await connected();
    const before = port.sent.length;
    await assert.rejects(client.request(''), TypeError);
    await assert.rejects(client.request('host.ping', {}, { timeout: -1 }), TypeError);
    assert.equal(port.sent.length, before);
  });

  it('rejects a call whose message cannot be sent', async () => {
    const { client, port } = await connected();
    port.closed = true; // the browser already tore the port down
    await assert.rejects(client.request('host.ping'), (err) => err.reason === 'send_failed');
  });
});

describe('host client: disconnects', () => {
  const cases = [
    ['Specified native messaging host not found.', 'not_installed', /ferry install/],
    ['Access to the specified native messaging host is forbidden.', 'forbidden', /ferry doctor/],
    ['Native host has exited.', 'exited', /exited/],
    ['Error when communicating with the native messaging host.', 'protocol_error', /ferry doctor/],
    ['Something new Chrome says.', 'disconnected', /Something new Chrome says/],
    ['', 'disconnected', /closed/],
  ];
  for (const [browserMessage, reason, advice] of cases) {
    it(`rejects every pending call with reason ${reason} for "${browserMessage}"`, async () => {
      const { client, port } = await connected();
      const calls = [track(client.request('host.ping')), track(client.request('host.info'))];
      port.drop(browserMessage);
      await flush();
      for (const call of calls) {
        assert.ok(call.error instanceof Error);
        assert.equal(call.error.reason, reason);
        assert.match(call.error.message, advice);
      }
      assert.equal(client.state, 'disconnected');
      assert.equal(client.lastError.reason, reason);
      assert.equal(client.hostInfo, null);
    });
  }

  it('fails calls made while connecting when the host is not installed', async () => {
    const { client, native } = setup();
    const call = track(client.request('host.info'));
    native.last.drop('Specified native messaging host not found.');
    await flush();
    assert.equal(call.error.reason, 'not_installed');
  });

  it('ignores events from a port it has already replaced', async () => {
    const { client, port, native } = await connected();
    port.drop('Native host has exited.');
    client.connect();
    const fresh = native.last;
    assert.notEqual(fresh, port);
    port.drop('Native host has exited.');
    port.deliver({ jsonrpc: '2.0', id: fresh.sentRequest('host.hello').id, result: HELLO_RESULT });
    await flush();
    assert.equal(client.state, 'connecting', 'only the fresh port can complete the hello');
  });
});

describe('host client: reconnecting', () => {
  it('backs off 250 ms doubling to 30 s, and resets after a successful hello', async () => {
    const { client, native, timers } = await connected();
    native.last.drop('Native host has exited.');
    const expected = [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000];
    for (const delay of expected) {
      const before = native.ports.length;
      timers.advance(delay - 1);
      assert.equal(native.ports.length, before, `no attempt before ${delay} ms`);
      timers.advance(1);
      assert.equal(native.ports.length, before + 1, `an attempt at ${delay} ms`);
      assert.equal(client.state, 'connecting');
      native.last.drop('Native host has exited.');
    }
    timers.advance(30_000);
    answerHello(native.last);
    await flush();
    assert.equal(client.state, 'connected');
    const before = native.ports.length;
    native.last.drop('Native host has exited.');
    timers.advance(250);
    assert.equal(native.ports.length, before + 1, 'back to 250 ms after a good connection');
  });

  it('connects at once for a request made while waiting to reconnect', async () => {
    const { client, native, timers } = await connected();
    native.last.drop('Native host has exited.');
    timers.advance(250);
    native.last.drop('Native host has exited.'); // now waiting 500 ms
    const before = native.ports.length;
    const call = track(client.request('host.info'));
    assert.equal(native.ports.length, before + 1, 'no waiting for the backoff');
    answerHello(native.last);
    await flush();
    native.last.deliver({ jsonrpc: '2.0', id: lastRequest(native.last).id, result: { ok: 1 } });
    await flush();
    assert.deepEqual(call.value, { ok: 1 });
    timers.advance(60_000);
    assert.equal(native.ports.length, before + 1, 'the cancelled backoff timer does not open another port');
  });

  it('gives up on a hello that never comes back, then retries with backoff', async () => {
    const { client, native, timers } = setup({ helloTimeout: 1000 });
    const call = track(client.request('host.info'));
    timers.advance(1000);
    await flush();
    assert.equal(client.lastError.reason, 'hello_timeout');
    assert.equal(call.error.reason, 'hello_timeout');
    assert.equal(native.ports[0].closed, true);
    timers.advance(250);
    assert.equal(native.ports.length, 2);
  });
});

describe('host client: incompatible host', () => {
  it('shows the host\'s mismatch message and stops reconnecting', async () => {
    const { client, native, timers } = setup();
    const call = track(client.request('host.info'));
    const port = native.last;
    const hostMessage = 'host speaks protocol 2, extension speaks 1: update the Ferry extension';
    port.deliver({
      jsonrpc: '2.0',
      id: port.sentRequest('host.hello').id,
      error: { code: -32000, message: hostMessage, data: { host_protocol: 2, client_protocol: 1 } },
    });
    await flush();
    assert.equal(client.state, 'incompatible');
    assert.deepEqual(client.lastError, { reason: 'incompatible', message: hostMessage });
    assert.equal(call.error.reason, 'incompatible');
    assert.equal(call.error.message, hostMessage);
    assert.deepEqual(call.error.data, { host_protocol: 2, client_protocol: 1 });
    assert.equal(port.closed, true);
    assert.equal(port.sent.length, 1, 'the held request was never sent');

    timers.advance(10 * 60_000);
    assert.equal(native.ports.length, 1, 'no reconnect loop');
    await assert.rejects(client.request('host.ping'), (err) => err.reason === 'incompatible' && err.message === hostMessage);
    client.connect();
    assert.equal(native.ports.length, 1, 'connect() alone does not leave incompatible');

    client.retry();
    assert.equal(native.ports.length, 2, 'an explicit retry does');
    assert.equal(client.state, 'connecting');
  });

  it('treats a hello result with another protocol number as incompatible', async () => {
    const { client, native } = setup();
    client.connect();
    answerHello(native.last, { name: 'ferry', version: '9.0.0', protocol: 2 });
    await flush();
    assert.equal(client.state, 'incompatible');
    assert.match(client.lastError.message, /protocol 2/);
  });
});

describe('host client: chunked messages', () => {
  it('resolves a call whose response arrives in chunks', async () => {
    const { client, port } = await connected();
    const call = track(client.request('host.ping', { size: 100 }));
    const text = JSON.stringify({ jsonrpc: '2.0', id: lastRequest(port).id, result: { payload: 'é'.repeat(100) } });
    const cut = [0, 40, 90, text.length];
    const frames = cut.slice(0, -1).map((start, i) => ({
      jsonrpc: '2.0', method: '$/chunk', params: { id: 'c1', index: i, count: 3, data: text.slice(start, cut[i + 1]) },
    }));
    port.deliver(frames[2]);
    port.deliver(frames[0]);
    await flush();
    assert.equal(call.settled, false);
    port.deliver(frames[1]);
    await flush();
    assert.deepEqual(call.value, { payload: 'é'.repeat(100) });
  });

  it('never delivers a broken sequence and forgets partial ones on disconnect', async () => {
    const { client, port, calls, timers } = await connected();
    const call = track(client.request('host.ping', {}, { timeout: 60_000 }));
    const text = JSON.stringify({ jsonrpc: '2.0', id: lastRequest(port).id, result: 'x' });
    port.deliver({ jsonrpc: '2.0', method: '$/chunk', params: { id: 'c2', index: 0, count: 2, data: text.slice(0, 5) } });
    port.deliver({ jsonrpc: '2.0', method: '$/chunk', params: { id: 'c2', index: 0, count: 2, data: text.slice(0, 5) } });
    port.deliver({ jsonrpc: '2.0', method: '$/chunk', params: { id: 'c2', index: 1, count: 2, data: text.slice(5) } });
    await flush();
    assert.equal(call.settled, false);
    assert.match(calls.error.join('\n'), /repeated/);

    port.deliver({ jsonrpc: '2.0', method: '$/chunk', params: { id: 'c3', index: 0, count: 2, data: text.slice(0, 5) } });
    port.drop('Native host has exited.');
    const errorsBefore = calls.error.length;
    timers.advance(30_000);
    assert.equal(calls.error.length, errorsBefore, 'no timeout error for a sequence of a dead connection');
  });

  it('delivers chunked notifications to subscribers', async () => {
    const { client, port } = await connected();
    const got = [];
    client.onNotification('run.event', (params) => got.push(params));
    const text = JSON.stringify({ jsonrpc: '2.0', method: 'run.event', params: { delta: 'abc'.repeat(10) } });
    port.deliver({ jsonrpc: '2.0', method: '$/chunk', params: { id: 'n1', index: 0, count: 2, data: text.slice(0, 10) } });
    port.deliver({ jsonrpc: '2.0', method: '$/chunk', params: { id: 'n1', index: 1, count: 2, data: text.slice(10) } });
    assert.deepEqual(got, [{ delta: 'abc'.repeat(10) }]);
  });
});

describe('host client: notifications', () => {
  it('delivers to method subscribers and "*" subscribers until they unsubscribe', async () => {
    const { client, port } = await connected();
    const specific = [];
    const all = [];
    const off = client.onNotification('run.event', (params, method) => specific.push([method, params]));
    client.onNotification('*', (params, method) => all.push(method));
    port.deliver({ jsonrpc: '2.0', method: 'run.event', params: { n: 1 } });
    port.deliver({ jsonrpc: '2.0', method: 'other', params: {} });
    off();
    port.deliver({ jsonrpc: '2.0', method: 'run.event', params: { n: 2 } });
    assert.deepEqual(specific, [['run.event', { n: 1 }]]);
    assert.deepEqual(all, ['run.event', 'other', 'run.event']);
  });

  it('keeps delivering when one subscriber throws', async () => {
    const { client, port, calls } = await connected();
    const got = [];
    client.onNotification('e', () => {
      throw new Error('boom');
    });
    client.onNotification('e', (p) => got.push(p));
    port.deliver({ jsonrpc: '2.0', method: 'e', params: 1 });
    assert.deepEqual(got, [1]);
    assert.match(calls.error[0], /listener for e failed/);
  });

  it('ignores messages that are not JSON-RPC 2.0', async () => {
    const { port, calls } = await connected();
    port.deliver({ id: 1, result: 1 });
    port.deliver([{ jsonrpc: '2.0', method: 'x' }]);
    assert.equal(calls.error.length, 2);
  });
});

describe('host client: requests from the host', () => {
  it('answers with the handler\'s result', async () => {
    const { client, port } = await connected();
    client.registerHandler('tabs.list', async (params, ctx) => ({ echoed: params, method: ctx.method }));
    port.deliver({ jsonrpc: '2.0', id: 'h1', method: 'tabs.list', params: { all: true } });
    await flush();
    assert.deepEqual(lastRequest(port), { jsonrpc: '2.0', id: 'h1', result: { echoed: { all: true }, method: 'tabs.list' } });
  });

  it('sends null for a handler that returns nothing', async () => {
    const { client, port } = await connected();
    client.registerHandler('ui.flash', () => {});
    port.deliver({ jsonrpc: '2.0', id: 7, method: 'ui.flash' });
    await flush();
    assert.deepEqual(lastRequest(port), { jsonrpc: '2.0', id: 7, result: null });
  });

  it('answers -32601 for an unknown method', async () => {
    const { port } = await connected();
    port.deliver({ jsonrpc: '2.0', id: 'h2', method: 'nope.nothing' });
    await flush();
    const reply = lastRequest(port);
    assert.equal(reply.id, 'h2');
    assert.equal(reply.error.code, -32601);
    assert.match(reply.error.message, /nope\.nothing/);
  });

  it('turns thrown errors into JSON-RPC errors', async () => {
    const { client, port } = await connected();
    client.registerHandler('a', () => {
      throw Object.assign(new Error('bad tab'), { code: -32602, data: { tab_id: 3 } });
    });
    client.registerHandler('b', async () => {
      throw new Error('exploded');
    });
    port.deliver({ jsonrpc: '2.0', id: 1, method: 'a' });
    port.deliver({ jsonrpc: '2.0', id: 2, method: 'b' });
    await flush();
    const replies = Object.fromEntries(port.sent.filter((m) => m.id === 1 || m.id === 2).filter((m) => m.error).map((m) => [m.id, m.error]));
    assert.deepEqual(replies[1], { code: -32602, message: 'bad tab', data: { tab_id: 3 } });
    assert.deepEqual(replies[2], { code: -32603, message: 'exploded' });
  });

  it('refuses a second handler for the same method, and allows it after unregistering', async () => {
    const { client } = setup();
    const off = client.registerHandler('x', () => 1);
    assert.throws(() => client.registerHandler('x', () => 2), /already registered/);
    off();
    client.registerHandler('x', () => 3);
  });

  it('drops the answer when the connection changed while the handler ran', async () => {
    const { client, port } = await connected();
    let finish;
    client.registerHandler('slow', () => new Promise((resolve) => (finish = resolve)));
    port.deliver({ jsonrpc: '2.0', id: 'h3', method: 'slow' });
    await flush();
    port.drop('Native host has exited.');
    const sentBefore = port.sent.length;
    finish('done');
    await flush();
    assert.equal(port.sent.length, sentBefore);
  });
});
