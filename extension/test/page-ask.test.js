// ferry.ask and disabled origins: the page API's side (page/ferry-main.js in a vm
// context) and the service worker's (background/pageactions.js with a fake host).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createPageActions } from '../background/pageactions.js';
import { fakeClient, fakeSWPort, loadPageAPI as load, tick } from '../testing/page-harness.js';

describe('ferry.ask in the page', () => {
  it('sends the text on the private port and resolves with the run', async () => {
    const { ferry, port, fromBridge } = load();
    const p = ferry.ask('add milk');
    await tick();
    const call = port.sent.find((m) => m.t === 'call');
    assert.deepEqual({ op: call.op, arguments: call.arguments }, { op: 'ask', arguments: { text: 'add milk' } });
    fromBridge({ t: 'reply', rid: call.rid, result: { conversation_id: 'c1', run_id: 'r1' } });
    assert.deepEqual({ ...(await p) }, { conversation_id: 'c1', run_id: 'r1' });
  });

  it('rejects with the reason the host gave', async () => {
    const { ferry, port, fromBridge } = load();
    const p = ferry.ask('x');
    await tick();
    const call = port.sent.find((m) => m.t === 'call');
    fromBridge({ t: 'reply', rid: call.rid, error: 'the user did not allow https://a.example to start Ferry runs' });
    await assert.rejects(p, /did not allow/);
    await assert.rejects(ferry.ask('  '), /needs the text/);
  });

  it('ready() and ask() reject when the page API is off for the origin', async () => {
    const { ferry, fromBridge } = load();
    const ready = ferry.ready(5000);
    fromBridge({ t: 'status', connected: true, disabled: true, reason: "Ferry's page API is turned off for https://a.example" });
    await assert.rejects(ready, /turned off for https:\/\/a\.example/);
    await assert.rejects(ferry.ready(), /turned off/);
    await assert.rejects(ferry.ask('x'), /turned off/);
  });
});

describe('ferry.ask in the service worker', () => {
  const sender = { tab: { id: 4, url: 'https://a.example/p' }, frameId: 0, url: 'https://a.example/p', origin: 'https://a.example' };

  it('sends page.ask with the tab, frame and origin of the port sender', async () => {
    const client = fakeClient({ 'page.status': { disabled: false }, 'page.ask': { success: true, result: { conversation_id: 'c', run_id: 'r' } } });
    const pa = createPageActions(client, {}, { logger: { warn() {} } });
    const port = fakeSWPort(sender);
    pa.open(port);
    port.send({ t: 'call', rid: 9, op: 'ask', arguments: { text: 'hello', origin: 'https://evil.example' }, origin: 'https://evil.example' });
    await tick();
    const ask = client.requests.find((r) => r.method === 'page.ask');
    assert.deepEqual(ask.params, { tab_id: 4, frame_id: 0, origin: 'https://a.example', text: 'hello' });
    assert.deepEqual(port.posted.find((m) => m.t === 'reply'), { t: 'reply', rid: 9, result: { conversation_id: 'c', run_id: 'r' }, error: undefined, code: undefined });
  });

  it("passes a refusal's code and reason on by value", async () => {
    const client = fakeClient({ 'page.status': { disabled: false }, 'page.ask': { success: false, code: 'RATE_LIMITED', reason: 'too many ferry.ask calls' } });
    const pa = createPageActions(client, {}, { logger: { warn() {} } });
    const port = fakeSWPort(sender);
    pa.open(port);
    port.send({ t: 'call', rid: 3, op: 'ask', arguments: { text: 'hello' } });
    await tick();
    assert.deepEqual(port.posted.find((m) => m.t === 'reply'), { t: 'reply', rid: 3, result: undefined, error: 'too many ferry.ask calls', code: 'RATE_LIMITED' });
  });

  it('tells a disabled origin so in its status', async () => {
    const client = fakeClient({ 'page.status': ({ origin }) => ({ disabled: true, reason: `off for ${origin}` }) });
    const pa = createPageActions(client, {}, { logger: { warn() {} } });
    const port = fakeSWPort(sender);
    pa.open(port);
    port.send({ t: 'hello' });
    await tick();
    const statuses = port.posted.filter((m) => m.t === 'status');
    assert.ok(statuses.length >= 1);
    for (const s of statuses) assert.deepEqual(s, { t: 'status', connected: true, disabled: true, reason: 'off for https://a.example' });
  });
});
