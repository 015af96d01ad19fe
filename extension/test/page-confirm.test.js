// The page's own confirmation of its actions in the service worker
// (background/pageactions.js): page.action.confirm offered to the frame that
// declared the action and page.action.confirm.done telling it how it ended, with a
// fake host client, fake runtime ports and a manual clock.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RUN_SLACK_MS, createPageActions } from '../background/pageactions.js';
import { FakeTimers, flush, recordingLogger, track } from '../testing/fakes.js';

function fakeClient() {
  const handlers = new Map();
  return {
    state: 'connected',
    handlers,
    requests: [],
    async request(method, params) {
      this.requests.push({ method, params });
      return {};
    },
    notify() {}, connect() {}, subscribe() {},
    registerHandler(method, fn) { handlers.set(method, fn); },
  };
}

function fakePort(sender) {
  const posted = [];
  let onMsg = null;
  let onGone = null;
  return {
    sender, posted,
    post: (m) => posted.push(structuredClone(m)),
    onMessage: (fn) => { onMsg = fn; },
    onDisconnect: (fn) => { onGone = fn; },
    disconnect() {},
    send: (m) => onMsg(m),
    drop: () => onGone(),
    of: (t) => posted.filter((m) => m.t === t),
  };
}

const sender = (frameId = 0) => ({ tab: { id: 4, url: 'https://a.example/' }, frameId, url: 'https://a.example/', origin: 'https://a.example' });

function setup() {
  const timers = new FakeTimers();
  const client = fakeClient();
  const { logger } = recordingLogger();
  const pa = createPageActions(client, { onTabRemoved() {} }, { timers, logger });
  pa.register();
  const top = fakePort(sender(0));
  pa.open(top);
  const confirm = (params) => client.handlers.get('page.action.confirm')(params);
  const done = (params) => client.handlers.get('page.action.confirm.done')(params);
  return { timers, client, pa, top, confirm, done };
}

const params = (over = {}) => ({ tab_id: 4, frame_id: 0, call_id: 'call_1', id: 'delete_all', arguments: { all: true }, message: 'Delete everything?', timeout_ms: 1000, ...over });

describe('page.action.confirm', () => {
  it('registers both handlers', () => {
    const { client } = setup();
    assert.equal(typeof client.handlers.get('page.action.confirm'), 'function');
    assert.equal(typeof client.handlers.get('page.action.confirm.done'), 'function');
  });

  it('asks the frame and resolves with the page answer', async () => {
    const { top, confirm } = setup();
    const got = track(confirm(params()));
    const [msg] = top.of('confirm');
    assert.equal(msg.req.call_id, 'call_1');
    assert.equal(msg.req.id, 'delete_all');
    assert.deepEqual(msg.req.arguments, { all: true });
    assert.equal(msg.req.message, 'Delete everything?');
    top.send({ t: 'confirmed', rid: msg.rid, out: { answered: true, approved: true, extra: 'x' } });
    await flush();
    assert.deepEqual(got.value, { answered: true, approved: true });
  });

  it('passes a rejection by the page through', async () => {
    const { top, confirm } = setup();
    const p = confirm(params());
    top.send({ t: 'confirmed', rid: top.of('confirm')[0].rid, out: { answered: true, approved: false } });
    assert.deepEqual(await p, { answered: true, approved: false });
  });

  it('ignores an answer to a confirmation the frame was not sent', async () => {
    const { pa, top, confirm, timers } = setup();
    const child = fakePort(sender(2));
    pa.open(child);
    const got = track(confirm(params()));
    const { rid } = top.of('confirm')[0];
    top.send({ t: 'confirmed', rid: rid + 100, out: { answered: true, approved: true } });
    child.send({ t: 'confirmed', rid, out: { answered: true, approved: true } });
    await flush();
    assert.equal(got.settled, false);
    assert.equal(child.of('confirm').length, 0);
    timers.advance(1000 + RUN_SLACK_MS);
    await flush();
    assert.deepEqual(got.value, { answered: false });
  });

  it('answers {answered: false} at once without a frame or a call id', async () => {
    const { top, confirm } = setup();
    assert.deepEqual(await confirm(params({ frame_id: 7 })), { answered: false });
    assert.deepEqual(await confirm(params({ tab_id: 99 })), { answered: false });
    assert.deepEqual(await confirm(params({ call_id: '' })), { answered: false });
    assert.deepEqual(await confirm(params({ call_id: 42 })), { answered: false });
    assert.equal(top.of('confirm').length, 0);
  });

  it('times out as unanswered after timeout_ms plus the slack, and a late answer changes nothing', async () => {
    const { top, confirm, timers } = setup();
    const got = track(confirm(params({ timeout_ms: 1000 })));
    timers.advance(1000 + RUN_SLACK_MS - 1);
    await flush();
    assert.equal(got.settled, false);
    timers.advance(1);
    await flush();
    assert.deepEqual(got.value, { answered: false });
    top.send({ t: 'confirmed', rid: top.of('confirm')[0].rid, out: { answered: true, approved: true } });
    await flush();
    assert.deepEqual(got.value, { answered: false });
    assert.equal(timers.pendingCount, 0);
  });

  it('defaults to 30 s plus the slack', async () => {
    const { confirm, timers } = setup();
    const got = track(confirm(params({ timeout_ms: 0 })));
    timers.advance(30_000 + RUN_SLACK_MS - 1);
    await flush();
    assert.equal(got.settled, false);
    timers.advance(1);
    await flush();
    assert.deepEqual(got.value, { answered: false });
  });

  it('clears its timer once answered', async () => {
    const { top, confirm, timers } = setup();
    const p = confirm(params());
    assert.equal(timers.pendingCount, 1);
    top.send({ t: 'confirmed', rid: top.of('confirm')[0].rid, out: { answered: true, approved: true } });
    await p;
    assert.equal(timers.pendingCount, 0);
  });

  it('resolves unanswered when the frame goes away', async () => {
    const { top, confirm } = setup();
    const got = track(confirm(params()));
    top.drop();
    await flush();
    assert.deepEqual(got.value, { answered: false });
  });
});

describe('page.action.confirm.done', () => {
  it('tells the frame how it ended and settles its pending confirmation of that call', async () => {
    const { top, confirm, done, timers } = setup();
    const first = track(confirm(params({ call_id: 'call_1' })));
    const other = track(confirm(params({ call_id: 'call_2' })));
    const out = done({ tab_id: 4, frame_id: 0, call_id: 'call_1', approved: true, by: 'user' });
    await flush();
    assert.deepEqual(out, {});
    assert.deepEqual(first.value, { answered: false });
    assert.equal(other.settled, false);
    assert.deepEqual(top.of('confirm_done'), [{ t: 'confirm_done', call_id: 'call_1', approved: true, by: 'user' }]);
    assert.equal(timers.pendingCount, 1);
  });

  it('sends denials with who decided, and coerces approved and by', () => {
    const { top, done } = setup();
    done({ tab_id: 4, call_id: 'call_3', approved: 0, by: 'timeout' });
    done({ tab_id: 4, frame_id: 0, call_id: 'call_4' });
    assert.deepEqual(top.of('confirm_done'), [
      { t: 'confirm_done', call_id: 'call_3', approved: false, by: 'timeout' },
      { t: 'confirm_done', call_id: 'call_4', approved: false, by: '' },
    ]);
  });

  it('goes only to the frame named, and is a no-op for a frame that is gone', () => {
    const { pa, top, done } = setup();
    const child = fakePort(sender(2));
    pa.open(child);
    assert.deepEqual(done({ tab_id: 4, frame_id: 2, call_id: 'c', approved: true, by: 'page' }), {});
    assert.equal(top.of('confirm_done').length, 0);
    assert.equal(child.of('confirm_done').length, 1);
    assert.deepEqual(done({ tab_id: 4, frame_id: 9, call_id: 'c', approved: true }), {});
    assert.deepEqual(done({ tab_id: 5, call_id: 'c', approved: true }), {});
    assert.equal(top.of('confirm_done').length + child.of('confirm_done').length, 1);
  });

  it('a later page answer to a settled confirmation is ignored', async () => {
    const { top, confirm, done } = setup();
    const got = track(confirm(params()));
    const { rid } = top.of('confirm')[0];
    done({ tab_id: 4, frame_id: 0, call_id: 'call_1', approved: false, by: 'user' });
    top.send({ t: 'confirmed', rid, out: { answered: true, approved: true } });
    await flush();
    assert.deepEqual(got.value, { answered: false });
  });
});
