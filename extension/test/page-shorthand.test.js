// The shorthand dialect's page API and the page-action hops: what the page API sends and keeps
// (page/ferry-main.js in a vm context) and what the service worker lets through
// (background/pageactions.js with a fake host).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createPageActions } from '../background/pageactions.js';
import { fakeClient, fakeSWPort, loadPageAPI as load, pageSource as source, tick, wire } from '../testing/page-harness.js';

describe('the shorthand dialect\'s page API', () => {
  it('refuses an action with neither a handler nor a target', () => {
    const { ferry } = load();
    assert.throws(() => ferry.action('nothing', { description: 'does nothing' }), /handler .* or a target/);
    assert.doesNotThrow(() => ferry.action('drive', { target: '#x' }));
  });

  it('sends the page\'s own flags with its declarations', async () => {
    const { ferry, port } = load();
    ferry.init({ permissions: { writeStore: true } });
    ferry.action('setTheme', { parameters: { theme: { type: 'string', required: true } }, permissions: ['writeStore'], handler: () => ({}) });
    await tick();
    const update = port.sent.findLast((m) => m.t === 'update');
    assert.deepEqual(update.permissions, { readStore: true, writeStore: true, emitEvents: true });
  });

  it('passes the trace of an emit on to calls made while it is handled', async () => {
    const { ferry, port, answer } = load();
    ferry.action('addToCart', { handler: (p, api) => { api.emit('cart:add', p); return { added: p.productId }; } });
    ferry.on('cart:add', () => { ferry.execute('addToCart', { productId: 'again' }); ferry.ask('and again'); });
    const out = await answer({ t: 'exec', id: 'addToCart', arguments: { productId: 'SKU-42' }, call_id: 'c1', trace_id: 'tr1', depth: 2, granted: ['emitEvents'] });
    assert.equal(out.ok, true);
    const calls = port.sent.filter((m) => m.t === 'call');
    assert.deepEqual(calls.map((c) => [c.op, c.trace_id, c.depth]), [['execute', 'tr1', 3], ['ask', 'tr1', 3]]);
    // Outside the handling of an event, a call starts its own trace.
    ferry.execute('addToCart', {});
    await tick();
    assert.equal(port.sent.findLast((m) => m.t === 'call').trace_id, undefined);
  });

  it('counts executions, denials and pending confirmations in getStats()', async () => {
    const { ferry, fromBridge, answer } = load();
    const denied = [];
    ferry.on('denied', (e) => denied.push(e.data));
    ferry.on('confirm', () => {});
    ferry.action('a', { handler: () => 1 });
    await answer({ t: 'exec', id: 'a', arguments: {}, call_id: 'c1' });
    fromBridge({ t: 'denied', id: 'a', call_id: 'c2', code: 'PERMISSION_DENIED', reason: 'nope' });
    fromBridge({ t: 'denied', id: 'a', call_id: 'c2', code: 'PERMISSION_DENIED', reason: 'nope' });
    fromBridge({ t: 'confirm', rid: 5, call_id: 'c3', id: 'a', arguments: {}, message: 'ok?' });
    const s = ferry.getStats();
    assert.deepEqual([...s.actions], ['a']);
    assert.equal(s.logSize, 1);
    assert.equal(s.log[0].action, 'a');
    assert.equal(s.pendingConfirmations, 1);
    assert.equal(s.denied, 1, 'one denial, told once');
    assert.deepEqual(denied.map((d) => [d.action, d.code, d.by]), [['a', 'PERMISSION_DENIED', 'host']]);
  });

  it('maps an MCP error result to a handler error with its text', async () => {
    const { ferry, answer } = load();
    ferry.action('mcp_fail', { handler: () => ({ content: [{ type: 'text', text: 'out of stock' }], isError: true }) });
    ferry.action('mcp_ok', { handler: () => ({ content: [{ type: 'text', text: '{"n":2}' }] }) });
    const bad = await answer({ t: 'exec', id: 'mcp_fail', arguments: {}, call_id: 'x1' });
    assert.equal(bad.code, 'HANDLER_ERROR');
    assert.match(bad.reason, /out of stock/);
    const good = await answer({ t: 'exec', id: 'mcp_ok', arguments: {}, call_id: 'x2' });
    assert.deepEqual(good.result, { n: 2 });
  });

  it('keeps a per-record action\'s record among its arguments', async () => {
    const { ferry, answer } = load();
    let got;
    ferry.records('tasks', () => [{ id: 't1', text: 'x' }]);
    ferry.action('toggle', { record: 'tasks', run: (args, api) => { got = { args, record: api.record }; } });
    const out = await answer({ t: 'exec', id: 'toggle', arguments: { record: 't1' }, call_id: 'r1' });
    assert.equal(out.ok, true);
    assert.deepEqual({ ...got.args }, { record: 't1' });
    assert.equal(got.record.id, 't1');
  });

  it('knows the handshake by the name lib/wire-names.js gives it', () => {
    assert.match(source, new RegExp(`const HANDSHAKE = '${wire.HANDSHAKE}';`));
  });
});

describe('page actions in the service worker', () => {
  const top = { tab: { id: 4, url: 'https://a.example/p' }, frameId: 0, url: 'https://a.example/p', origin: 'https://a.example' };
  const ad = { tab: { id: 4, url: 'https://a.example/p' }, frameId: 7, url: 'https://ads.example/f', origin: 'https://ads.example' };
  const api = { tabsGet: async () => ({ id: 4, url: 'https://a.example/p' }) };

  it('refuses tools, execute and ask from a cross-origin frame, naming its origin, and asks the host nothing', async () => {
    const client = fakeClient({ 'page.status': { disabled: false } });
    const pa = createPageActions(client, api, { logger: { warn() {} } });
    const port = fakeSWPort(ad);
    pa.open(port);
    port.send({ t: 'call', rid: 1, op: 'tools' });
    port.send({ t: 'call', rid: 2, op: 'execute', name: 'buy', arguments: {} });
    port.send({ t: 'call', rid: 3, op: 'ask', arguments: { text: 'buy it' } });
    await tick();
    const replies = port.posted.filter((m) => m.t === 'reply');
    assert.equal(replies.length, 3);
    assert.equal(replies[0].code, 'PERMISSION_DENIED');
    assert.match(replies[0].error, /https:\/\/ads\.example/);
    assert.equal(replies[1].result.code, 'PERMISSION_DENIED');
    assert.match(replies[1].result.reason, /https:\/\/ads\.example/);
    assert.match(replies[2].error, /https:\/\/ads\.example/);
    assert.deepEqual(client.requests.filter((r) => r.method.startsWith('page.actions') || r.method === 'page.ask'), []);
  });

  it('sends one update per frame at a time, the newest last', async () => {
    const seen = [];
    let release;
    const client = fakeClient({
      'page.status': { disabled: false },
      'page.actions.update': (p) => new Promise((resolve) => { seen.push(p.seq); release = () => resolve({ registered: [], refused: [] }); }),
    });
    const pa = createPageActions(client, api, { logger: { warn() {} } });
    const port = fakeSWPort(top);
    pa.open(port);
    for (let seq = 1; seq <= 5; seq++) port.send({ t: 'update', doc: 'd', seq, actions: [], snapshot: { actions: [] } });
    await tick();
    assert.deepEqual(seen, [1], 'one in flight');
    release();
    await tick();
    assert.deepEqual(seen, [1, 5], 'then the newest, the others skipped');
    release();
    await tick();
    assert.deepEqual(seen, [1, 5]);
  });

  it('passes the cause of a page call on to the host', async () => {
    const client = fakeClient({ 'page.status': { disabled: false }, 'page.actions.execute': { success: true } });
    const pa = createPageActions(client, api, { logger: { warn() {} } });
    const port = fakeSWPort(top);
    pa.open(port);
    port.send({ t: 'call', rid: 1, op: 'execute', name: 'a', arguments: { x: 1 }, trace_id: 't', depth: 2 });
    await tick();
    const ex = client.requests.find((r) => r.method === 'page.actions.execute');
    assert.deepEqual(ex.params, { tab_id: 4, frame_id: 0, origin: 'https://a.example', name: 'a', arguments: { x: 1 }, trace_id: 't', depth: 2 });
  });
});
