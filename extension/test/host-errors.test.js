import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RPC } from '../lib/host-errors.js';

// protocol/errors.go is the one table of codes; the extension's copy must be the
// same codes under the same names (CodeProtocolMismatch is PROTOCOL_MISMATCH).
describe('RPC error codes', () => {
  it('match protocol/errors.go, name for name', () => {
    const go = readFileSync(new URL('../../protocol/errors.go', import.meta.url), 'utf8');
    const fromGo = {};
    for (const [, name, code] of go.matchAll(/^\t(Code[A-Za-z]+) += (-\d+)$/gm)) {
      fromGo[name.slice(4).replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()] = Number(code);
    }
    assert.ok(Object.keys(fromGo).length >= 10, 'codes read from errors.go');
    assert.deepEqual({ ...RPC }, fromGo);
  });
});
