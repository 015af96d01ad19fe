// ui.confirm / ui.ask from the host to the side panel and back, through the
// real host client over a fake native port.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDispatcher } from '../background/dispatcher.js';
import { createRoutes } from '../background/routes.js';
import { LOCAL_GRACE_MS, PANEL_PORT, createUiRouter, validateAnswer } from '../background/ui.js';
import { createHostClient } from '../lib/host-client.js';
import { FakeTimers, fakeNativePorts, flush, recordingLogger } from '../testing/fakes.js';

const ID = 'hbkoapgnaiamicpgipblnghgmidgcmoc';
const ORIGIN = `chrome-extension://${ID}/`;

async function setup() {
  const timers = new FakeTimers();
  const ports = fakeNativePorts();
  const { logger } = recordingLogger();
  const client = createHostClient({ openPort: ports.openPort, timers, logger });
  const ui = createUiRouter({ client, timers, logger, now: () => timers.now });
  client.connect();
  const host = ports.last;
  host.deliver({ jsonrpc: '2.0', id: host.sent[0].id, result: { name: 'ferry', version: '0.1.0', protocol: 1 } });
  await flush();
  return { timers, client, ui, host, ports };
}

/** A side panel's end of the runtime port. */
function panel() {
  const p = { received: [], listeners: [], closers: [] };
  p.port = {
    name: PANEL_PORT,
    sender: { id: ID, url: `${ORIGIN}sidepanel/sidepanel.html` },
    post: (m) => p.received.push(structuredClone(m)),
    onMessage: (fn) => p.listeners.push(fn),
    onDisconnect: (fn) => p.closers.push(fn),
    disconnect: () => {},
  };
  p.send = (m) => p.listeners.forEach((fn) => fn(m));
  p.close = () => p.closers.forEach((fn) => fn(''));
  p.last = (kind) => p.received.filter((m) => m.kind === kind).at(-1);
  return p;
}

const confirmReq = (id, callId = 'call-1', timeout = 30_000) => ({
  jsonrpc: '2.0', id, method: 'ui.confirm',
  params: { call_id: callId, tool: 'click', arguments: { ref: 'e4' }, origin: 'https://shop.example', message: 'Click Buy?', dangerous: true, timeout_ms: timeout },
});
const reply = (host, id) => host.sent.find((m) => m.id === id && m.method === undefined);

describe('ui router', () => {
  it('refuses at once when no side panel is open, saying what to do', async () => {
    const { host } = await setup();
    host.deliver(confirmReq(900));
    await flush();
    const r = reply(host, 900);
    assert.equal(r.result, undefined);
    assert.match(r.error.message, /side panel is not open/);
    assert.match(r.error.message, /confirm click/);
    host.deliver({ jsonrpc: '2.0', id: 901, method: 'ui.ask', params: { call_id: 'q', question: 'Which?', timeout_ms: 1000 } });
    await flush();
    assert.match(reply(host, 901).error.message, /answer a question/);
  });

  it('shows a confirmation in the open panel and sends the answer back', async () => {
    const { host, ui } = await setup();
    const p = panel();
    ui.openPanel(p.port);
    assert.equal(p.received[0].kind, 'hello');
    host.deliver(confirmReq(7));
    await flush();
    const shown = p.last('prompt').prompt;
    assert.equal(shown.call_id, 'call-1');
    assert.equal(shown.method, 'ui.confirm');
    assert.equal(shown.params.origin, 'https://shop.example');
    assert.equal(reply(host, 7), undefined, 'waiting for the person');
    p.send({ kind: 'answer', call_id: 'call-1', answer: { approved: true } });
    await flush();
    assert.deepEqual(reply(host, 7).result, { approved: true });
    assert.deepEqual(p.last('prompt_closed'), { kind: 'prompt_closed', call_id: 'call-1', reason: 'answered' });
    assert.equal(ui.pendingCount, 0);
  });

  it('routes ask_user with free text, one choice and several', async () => {
    const { host, ui } = await setup();
    const p = panel();
    ui.openPanel(p.port);
    const asks = [
      [{ call_id: 'a1', question: 'Name?' }, { answer: 'Ana' }],
      [{ call_id: 'a2', question: 'Size?', options: ['S', 'M'] }, { answer: 'M' }],
      [{ call_id: 'a3', question: 'Extras?', options: ['x', 'y', 'z'], multiple: true }, { answer: ['x', 'z'] }],
    ];
    for (const [i, [params, answer]] of asks.entries()) {
      host.deliver({ jsonrpc: '2.0', id: 50 + i, method: 'ui.ask', params: { ...params, timeout_ms: 60_000 } });
      await flush();
      assert.deepEqual(p.last('prompt').prompt.params.options, params.options);
      p.send({ kind: 'answer', call_id: params.call_id, answer });
      await flush();
      assert.deepEqual(reply(host, 50 + i).result, answer);
    }
  });

  it('refuses malformed answers without settling the prompt', async () => {
    const { host, ui } = await setup();
    const p = panel();
    ui.openPanel(p.port);
    host.deliver(confirmReq(8));
    await flush();
    p.send({ kind: 'answer', call_id: 'call-1', answer: { approved: 'yes' } });
    await flush();
    assert.equal(p.last('answer_refused').reason, 'invalid');
    assert.equal(reply(host, 8), undefined);
    assert.equal(validateAnswer('ui.ask', { answer: [1] }), 'answer must be a string, a list of strings or null');
    assert.equal(validateAnswer('ui.ask', { answer: null, reason: 'declined' }), null);
  });

  it('takes a lasting answer only where the request offered one', async () => {
    const offer = { lasting: { scope: 'page_ask', origin: 'https://shop.example' } };
    assert.equal(validateAnswer('ui.confirm', { approved: true, lasting: true }, offer), null);
    assert.equal(validateAnswer('ui.confirm', { approved: false, lasting: true }, offer), null);
    assert.equal(validateAnswer('ui.confirm', { approved: true, lasting: true }, {}), 'this request offers no lasting answer');
    assert.equal(validateAnswer('ui.confirm', { approved: true, lasting: 'yes' }, offer), 'lasting must be true or false');
    const { host, ui } = await setup();
    const p = panel();
    ui.openPanel(p.port);
    host.deliver(confirmReq(9));
    await flush();
    p.send({ kind: 'answer', call_id: 'call-1', answer: { approved: true, lasting: true } });
    await flush();
    assert.equal(p.last('answer_refused').reason, 'invalid');
    assert.equal(reply(host, 9), undefined, 'a grant nobody offered never reaches the host');
  });

  it('takes the card down everywhere when one window answers; a late answer is refused', async () => {
    const { host, ui } = await setup();
    const a = panel();
    const b = panel();
    ui.openPanel(a.port);
    ui.openPanel(b.port);
    host.deliver(confirmReq(9));
    await flush();
    assert.ok(a.last('prompt') && b.last('prompt'));
    b.send({ kind: 'answer', call_id: 'call-1', answer: { approved: false } });
    await flush();
    assert.deepEqual(reply(host, 9).result, { approved: false });
    assert.equal(a.last('prompt_closed').call_id, 'call-1');
    a.send({ kind: 'answer', call_id: 'call-1', answer: { approved: true } });
    await flush();
    assert.deepEqual(a.last('answer_refused'), { kind: 'answer_refused', call_id: 'call-1', reason: 'expired' });
    assert.equal(host.sent.filter((m) => m.id === 9).length, 1, 'one reply only');
  });

  it('withdraws a prompt on ui.cancel; an answer after the timeout is refused', async () => {
    const { host, ui } = await setup();
    const p = panel();
    ui.openPanel(p.port);
    host.deliver(confirmReq(10));
    await flush();
    host.deliver({ jsonrpc: '2.0', method: 'ui.cancel', params: { call_id: 'call-1', reason: 'timeout' } });
    await flush();
    assert.deepEqual(p.last('prompt_closed'), { kind: 'prompt_closed', call_id: 'call-1', reason: 'timeout' });
    p.send({ kind: 'answer', call_id: 'call-1', answer: { approved: true } });
    await flush();
    assert.equal(p.last('answer_refused').reason, 'expired');
    assert.ok(!host.sent.some((m) => m.id === 10 && m.result?.approved === true), 'no approval after the deadline');
  });

  it('gives up locally a little after the host\'s deadline if the host never says so', async () => {
    const { host, ui, timers } = await setup();
    const p = panel();
    ui.openPanel(p.port);
    host.deliver(confirmReq(11, 'call-2', 1000));
    await flush();
    timers.advance(1000 + LOCAL_GRACE_MS);
    await flush();
    assert.equal(p.last('prompt_closed').reason, 'timeout');
    assert.match(reply(host, 11).error.message, /no answer within 1000 ms/);
    p.send({ kind: 'answer', call_id: 'call-2', answer: { approved: true } });
    assert.equal(p.last('answer_refused').reason, 'expired');
  });

  it('keeps a prompt when the panel closes, and shows it to the reopened panel', async () => {
    const { host, ui } = await setup();
    const first = panel();
    ui.openPanel(first.port);
    host.deliver(confirmReq(12));
    await flush();
    first.close();
    assert.equal(ui.panelCount, 0);
    const again = panel();
    ui.openPanel(again.port);
    assert.equal(again.received[0].prompts[0].call_id, 'call-1');
    again.send({ kind: 'answer', call_id: 'call-1', answer: { approved: true } });
    await flush();
    assert.deepEqual(reply(host, 12).result, { approved: true });
  });

  it('forwards run events and tasks, and replays a run to a panel that opens late', async () => {
    const { host, ui } = await setup();
    const early = panel();
    ui.openPanel(early.port);
    const evs = [1, 2, 3].map((seq) => ({ type: 'text_delta', run_id: 'r1', conversation_id: 'c', seq, text: `t${seq}` }));
    for (const e of evs) host.deliver({ jsonrpc: '2.0', method: 'chat.event', params: e });
    host.deliver({ jsonrpc: '2.0', method: 'tasks.changed', params: { conversation_id: 'c', tasks: [{ id: '1' }] } });
    assert.equal(early.received.filter((m) => m.kind === 'event').length, 3);
    assert.deepEqual(early.last('tasks'), { kind: 'tasks', conversation_id: 'c', tasks: [{ id: '1' }] });
    const late = panel();
    ui.openPanel(late.port);
    late.send({ kind: 'replay', run_id: 'r1' });
    assert.deepEqual(late.last('replay').events, evs);
    late.send({ kind: 'replay', run_id: 'unknown' });
    assert.deepEqual(late.last('replay').events, []);
  });

  it('tells the host how many side panels are open, on every change and on reconnect', async () => {
    const { host, ui, ports, timers } = await setup();
    const presence = (port) => port.sent.filter((m) => m.method === 'ui.presence').map((m) => m.params.panels);
    assert.deepEqual(presence(host), [0], 'sent on connect');
    assert.equal(host.sent.find((m) => m.method === 'ui.presence').id, undefined, 'a notification');
    const a = panel();
    const b = panel();
    ui.openPanel(a.port);
    ui.openPanel(b.port);
    a.close();
    a.close(); // a second disconnect of one port changes nothing
    assert.deepEqual(presence(host), [0, 1, 2, 1]);
    // The host restarts: the new one hears the count at once.
    host.drop('Native host has exited.');
    await flush();
    timers.advance(250); // the first reconnect delay
    await flush();
    const next = ports.last;
    assert.notEqual(next, host);
    next.deliver({ jsonrpc: '2.0', id: next.sent[0].id, result: { name: 'ferry', version: '0.1.0', protocol: 1 } });
    await flush();
    assert.deepEqual(presence(next), [1]);
    b.close();
    assert.deepEqual(presence(next), [1, 0]);
  });

  it('is reached through the dispatcher by extension pages only', async () => {
    const { client, ui } = await setup();
    const { logger } = recordingLogger();
    const dispatcher = createDispatcher(createRoutes(client, { ui }), { runtimeId: ID, origin: ORIGIN, logger });
    const p = panel();
    assert.equal(dispatcher.acceptPort(p.port), true);
    assert.equal(ui.panelCount, 1);
    const content = panel();
    content.port.sender = { id: ID, url: 'https://evil.example/', tab: { id: 3 } };
    let dropped = false;
    content.port.disconnect = () => (dropped = true);
    assert.equal(dispatcher.acceptPort(content.port), false);
    assert.equal(dropped, true);
    assert.equal(ui.panelCount, 1);
  });
});
