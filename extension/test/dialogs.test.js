// The worker's record of the tabs' dialogs (background/browser/dialogs.js), fed
// the way the pages' relays feed it: an open dialog fails calls on its tab at
// once and wakes the calls waiting there; its answer is remembered; a navigation
// or a closed tab ends it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDialogs } from '../background/browser/dialogs.js';

function fakeApi() {
  const updated = [];
  const removed = [];
  return {
    onTabUpdated: (fn) => updated.push(fn),
    onTabRemoved: (fn) => removed.push(fn),
    update: (id, change) => updated.forEach((fn) => fn(id, change, {})),
    remove: (id) => removed.forEach((fn) => fn(id)),
  };
}

const sender = (tabId) => ({ tab: { id: tabId }, url: 'https://shop.example/cart' });

describe('dialogs', () => {
  it('fails calls on a tab behind an open dialog, and wakes the waiting ones', async () => {
    const api = fakeApi();
    const d = createDialogs(api);
    const watch = d.watch(7);
    d.notice({ event: 'open', type: 'confirm', message: 'Empty the cart?' }, sender(7));
    await assert.rejects(watch.promise, (err) => err.reason === 'dialog_open' && /confirm dialog \("Empty the cart\?"\)/.test(err.message) && err.data?.dialog?.type === 'confirm');
    assert.throws(() => d.check(7), (err) => err.reason === 'dialog_open');
    assert.doesNotThrow(() => d.check(8), 'another tab is not behind it');
    d.notice({ event: 'closed', type: 'confirm', message: 'Empty the cart?', result: false }, sender(7));
    assert.equal(d.open(7), null);
    assert.deepEqual(d.since(7, 0).map(({ answer, by }) => ({ answer, by })), [{ answer: 'dismiss', by: 'person' }]);
  });

  it('remembers the dialogs answered in a driven page, and forgets a closed tab', () => {
    const api = fakeApi();
    const d = createDialogs(api);
    const t0 = Date.now();
    d.notice({ event: 'answered', type: 'prompt', message: 'Name?', answer: 'accept', text: 'Ada', by: 'browser_dialog' }, sender(3));
    assert.deepEqual(d.since(3, t0), [{ type: 'prompt', message: 'Name?', frame_url: 'https://shop.example/cart', answer: 'accept', text: 'Ada', by: 'browser_dialog' }]);
    d.notice({ event: 'open', type: 'alert', message: 'Hi' }, sender(3));
    api.update(3, { status: 'loading', url: 'https://shop.example/next' });
    assert.equal(d.open(3), null, 'a navigation ends the dialog');
    api.remove(3);
    assert.deepEqual(d.since(3, 0), []);
  });

  it('ignores notices that are not from a tab', () => {
    const d = createDialogs(fakeApi());
    assert.equal(d.notice({ event: 'open', type: 'alert', message: 'x' }, { url: 'chrome-extension://x/' }), false);
    assert.equal(d.notice(null, sender(1)), false);
  });
});
