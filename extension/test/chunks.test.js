import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createChunkAssembler, utf8Length } from '../lib/chunks.js';
import { FakeTimers, recordingLogger } from '../testing/fakes.js';

function setup(opts = {}) {
  const timers = new FakeTimers();
  const { logger, calls } = recordingLogger();
  const delivered = [];
  const asm = createChunkAssembler({ onMessage: (m) => delivered.push(m), timers, logger, ...opts });
  return { asm, timers, calls, delivered };
}

/** Splits the JSON text of `message` into `count` slices on code-point boundaries. */
function slices(message, count) {
  const chars = Array.from(JSON.stringify(message));
  const size = Math.ceil(chars.length / count);
  return Array.from({ length: count }, (_, i) => chars.slice(i * size, (i + 1) * size).join(''));
}

const big = { jsonrpc: '2.0', id: 7, result: { text: 'héllo wörld 你好 🚢'.repeat(20) } };

describe('chunk reassembly', () => {
  it('delivers the message once every index has arrived, in any order', () => {
    const { asm, delivered } = setup();
    const parts = slices(big, 5);
    for (const index of [3, 0, 4, 1]) asm.accept({ id: 'c1', index, count: 5, data: parts[index] });
    assert.equal(delivered.length, 0, 'nothing before the last chunk');
    asm.accept({ id: 'c1', index: 2, count: 5, data: parts[2] });
    assert.deepEqual(delivered, [big]);
    assert.equal(asm.size, 0, 'buffer released');
  });

  it('keeps interleaved sequences apart', () => {
    const { asm, delivered } = setup();
    const a = { jsonrpc: '2.0', method: 'a', params: { n: 'x'.repeat(50) } };
    const b = { jsonrpc: '2.0', method: 'b', params: { n: 'y'.repeat(50) } };
    const pa = slices(a, 2);
    const pb = slices(b, 3);
    asm.accept({ id: 'A', index: 0, count: 2, data: pa[0] });
    asm.accept({ id: 'B', index: 0, count: 3, data: pb[0] });
    asm.accept({ id: 'B', index: 1, count: 3, data: pb[1] });
    asm.accept({ id: 'A', index: 1, count: 2, data: pa[1] });
    asm.accept({ id: 'B', index: 2, count: 3, data: pb[2] });
    assert.deepEqual(delivered, [a, b]);
  });

  const broken = [
    ['a repeated index', [[0, 3], [0, 3], [1, 3], [2, 3]], /index 0 repeated/],
    ['an index equal to count', [[0, 3], [3, 3], [1, 3], [2, 3]], /out of range/],
    ['a negative index', [[-1, 3], [0, 3], [1, 3], [2, 3]], /out of range/],
    ['a fractional index', [[0, 3], [1.5, 3], [1, 3], [2, 3]], /out of range/],
    ['a changed count', [[0, 3], [1, 4], [1, 3], [2, 3]], /count changed/],
    ['a count below 2', [[0, 1]], /invalid count/],
  ];
  for (const [name, frames, why] of broken) {
    it(`drops the whole sequence on ${name} and ignores its remaining chunks`, () => {
      const { asm, delivered, calls, timers } = setup();
      const parts = slices(big, 3);
      for (const [index, count] of frames) asm.accept({ id: 'c9', index, count, data: parts[Math.abs(Math.trunc(index)) % 3] });
      assert.deepEqual(delivered, []);
      assert.equal(calls.error.length, 1, 'one error for one broken sequence');
      assert.match(calls.error[0], why);
      assert.match(calls.error[0], /c9/);
      timers.advance(30_000);
      assert.equal(asm.size, 0, 'tombstone expires');
      assert.equal(calls.error.length, 1, 'no second error from a timeout');
    });
  }

  it('drops a sequence whose joined text is not JSON', () => {
    const { asm, delivered, calls } = setup();
    asm.accept({ id: 'p', index: 0, count: 2, data: '{"jsonrpc":"2.0",' });
    asm.accept({ id: 'p', index: 1, count: 2, data: '"id":1,' });
    assert.deepEqual(delivered, []);
    assert.match(calls.error[0], /not JSON/);
    assert.equal(asm.size, 0);
  });

  it('drops a sequence larger than the limit, counting UTF-8 bytes', () => {
    const { asm, delivered, calls } = setup({ maxBytes: 10 });
    asm.accept({ id: 'ok', index: 0, count: 2, data: '"aaaa' });
    asm.accept({ id: 'ok', index: 1, count: 2, data: 'aaaa"' });
    assert.deepEqual(delivered, ['aaaaaaaa'], 'exactly 10 bytes passes');
    // Seven characters but 12 bytes: é is two bytes in UTF-8.
    asm.accept({ id: 'big', index: 0, count: 2, data: '"ééé' });
    asm.accept({ id: 'big', index: 1, count: 2, data: 'éé"' });
    assert.equal(delivered.length, 1);
    assert.match(calls.error[0], /larger than 10 bytes/);
  });

  it('drops a sequence still incomplete 30 s after its first chunk', () => {
    const { asm, delivered, calls, timers } = setup();
    const parts = slices(big, 3);
    asm.accept({ id: 't', index: 0, count: 3, data: parts[0] });
    timers.advance(20_000);
    asm.accept({ id: 't', index: 1, count: 3, data: parts[1] });
    timers.advance(9_999);
    assert.equal(calls.error.length, 0, 'the clock starts at the first chunk, not the latest');
    timers.advance(1);
    assert.match(calls.error[0], /incomplete after 30000 ms/);
    asm.accept({ id: 't', index: 2, count: 3, data: parts[2] });
    assert.deepEqual(delivered, [], 'a late last chunk does not resurrect it');
  });

  it('ignores frames without a string id', () => {
    const { asm, calls, delivered } = setup();
    asm.accept({ index: 0, count: 2, data: '1' });
    asm.accept(undefined);
    assert.equal(calls.error.length, 2);
    assert.equal(asm.size, 0);
    assert.deepEqual(delivered, []);
  });

  it('reset forgets partial sequences and their timers', () => {
    const { asm, timers, calls } = setup();
    asm.accept({ id: 'r', index: 0, count: 2, data: '[1' });
    asm.reset();
    assert.equal(asm.size, 0);
    assert.equal(timers.pendingCount, 0);
    timers.advance(60_000);
    assert.equal(calls.error.length, 0);
  });
});

describe('utf8Length', () => {
  it('agrees with Buffer.byteLength', () => {
    for (const s of ['', 'abc', 'é', '你好', '🚢', 'a🚢b你é', '\ud800', '\udc00x', 'x\ud83d']) {
      assert.equal(utf8Length(s), Buffer.byteLength(s, 'utf8'), JSON.stringify(s));
    }
  });
});
