// The page API (page/ferry-main.js) in a vm context with a fake window: both
// declaration dialects reach the bridge in one wire shape, and the
// private port is taken from the first handshake only.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fakeMessagePort as fakePort, loadPageAPI, tick } from '../testing/page-harness.js';

const load = () => {
  const { ferry, self, handshake } = loadPageAPI({ handshake: false });
  return { ferry, ctx: self, handshake };
};

describe('page API', () => {
  it('normalises list and shorthand declarations to one wire shape', async () => {
    const { ferry, ctx, handshake } = load();
    const port = fakePort();
    assert.equal(handshake(port), true, 'the handshake is stopped before page listeners');
    ferry.action('add_task', {
      desc: 'Add a task', kind: 'write',
      params: [{ name: 'text', label: 'Text', minLength: 1, maxLength: 80, pattern: /\S/ }],
      available: () => 'full', run: () => {}, expect: { desc: 'row shown', check: () => true, timeout: 500 },
    });
    ferry.action('addToCart', {
      description: 'Add to cart', parameters: { productId: { type: 'string', required: true } },
      handler: async () => ({}), confirm: true, permissions: ['writeStore'], dangerous: true,
    });
    await tick();
    const update = port.sent.findLast((m) => m.t === 'update');
    assert.deepEqual(update.actions, [
      { id: 'add_task', description: 'Add a task', kind: 'write',
        parameters: [{ name: 'text', label: 'Text', minLength: 1, maxLength: 80, pattern: '\\S' }],
        has_expect: true, expect_desc: 'row shown', expect_timeout_ms: 500, has_handler: true, source: 'ferry' },
      { id: 'addToCart', description: 'Add to cart', kind: 'write',
        parameters: { productId: { type: 'string', required: true } },
        confirm: true, dangerous: true, permissions: ['writeStore'], has_handler: true, source: 'ferry' },
    ]);
    assert.deepEqual(update.permissions, { readStore: true, writeStore: false, emitEvents: true });
    assert.deepEqual(update.snapshot.actions[0], { id: 'add_task', available: false, reason: 'full' });
  });

  it('takes the port of the first handshake only', async () => {
    const { ferry, handshake } = load();
    const real = fakePort();
    const forged = fakePort();
    handshake(real);
    assert.equal(handshake(forged), false);
    ferry.action('a', { run: () => {} });
    await tick();
    assert.equal(forged.sent.length, 0);
    assert.ok(real.sent.some((m) => m.t === 'update'));
  });

  it('ignores a handshake from another window', () => {
    const { handshake } = load();
    assert.equal(handshake(fakePort(), {}), false);
  });
});
