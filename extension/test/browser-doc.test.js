// protocol/BROWSER.md's method table is the worker's: every browser method the
// service worker answers is documented, and every documented one is answered.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createBrowserMethods, registerBrowserHandlers } from '../background/browser/index.js';

function documentedMethods() {
  const doc = readFileSync(new URL('../../protocol/BROWSER.md', import.meta.url), 'utf8');
  const start = doc.indexOf('\n## Methods\n');
  assert.ok(start >= 0, 'BROWSER.md has a Methods section');
  const end = doc.indexOf('\n## ', start + 1);
  const section = doc.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^\| `([a-z.]+)` \|/gm)].map((m) => m[1]).sort();
}

// Enough of lib/chrome-api.js for the methods to be built: every call does nothing.
const inertApi = new Proxy({}, { get: () => () => Promise.resolve() });

describe('BROWSER.md', () => {
  it('lists exactly the browser methods the service worker registers', () => {
    const registered = [];
    registerBrowserHandlers({ registerHandler: (method) => registered.push(method) }, inertApi);
    const documented = documentedMethods();
    assert.ok(documented.length >= 16, `only ${documented.length} methods in BROWSER.md's table`);
    assert.deepEqual(registered.sort(), documented);
    assert.deepEqual(Object.keys(createBrowserMethods(inertApi)).sort(), documented);
  });
});
