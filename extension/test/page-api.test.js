// The page API (page/ferry-main.js) in a vm context with a fake window: both
// declaration dialects and WebMCP reach the bridge in one wire shape, and the
// private port is taken from the first handshake only.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const ext = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = readFileSync(join(ext, 'page', 'ferry-main.js'), 'utf8');
// The names the bridge hands over with the handshake (lib/wire.js, loaded apart).
const wire = (() => { const c = vm.createContext({}); vm.runInContext(readFileSync(join(ext, 'lib', 'wire-names.js'), 'utf8'), c); return JSON.parse(JSON.stringify(vm.runInContext('globalThis.FerryWire', c))); })();

function load() {
  const listeners = [];
  const document = { documentElement: null, title: 'T', addEventListener() {}, querySelector: () => null };
  const win = {
    document,
    addEventListener: (type, fn) => listeners.push({ type, fn }),
    removeEventListener: (type, fn) => { const i = listeners.findIndex((l) => l.fn === fn); if (i >= 0) listeners.splice(i, 1); },
    dispatchEvent() {},
  };
  const ctx = vm.createContext({ setTimeout, clearTimeout, setInterval, clearInterval, console, CustomEvent: class {}, JSON, Symbol, Object, Promise, Error, TypeError, RegExp, Array, Map, Set, Number, String, Boolean });
  ctx.globalThis = ctx;
  Object.assign(ctx, win);
  ctx.window = ctx;
  vm.runInContext(source, ctx);
  const self = vm.runInContext('globalThis', ctx); // the window as the script sees it
  const handshake = (port, source = self) => {
    let stopped = false;
    const ev = { source, data: { type: 'ferry:bridge-port', wire }, ports: [port], stopImmediatePropagation: () => { stopped = true; } };
    for (const l of [...listeners]) if (l.type === 'message') l.fn(ev);
    return stopped;
  };
  return { ferry: self.ferry, ctx: self, handshake };
}

function fakePort() {
  const sent = [];
  return { sent, postMessage: (m) => sent.push(JSON.parse(JSON.stringify(m))), onmessage: null };
}

const tick = () => new Promise((r) => setTimeout(r, 20));

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
