// protocol/PAGES.md is held to lib/wire-names.js: every message type and method the
// extension's parts share is in the document's tables, and the tables name nothing
// the wire does not have. The page API and the bridge use only the names wire-names.js
// gives (no stray string literals for message types).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const ext = join(dirname(fileURLToPath(import.meta.url)), '..');
const doc = readFileSync(join(ext, '..', 'protocol', 'PAGES.md'), 'utf8');
const wire = (() => {
  const c = vm.createContext({});
  vm.runInContext(readFileSync(join(ext, 'lib', 'wire-names.js'), 'utf8'), c);
  return JSON.parse(JSON.stringify(vm.runInContext('globalThis.FerryWire', c)));
})();

/** The first column of the table under the heading that contains title. */
function table(title) {
  const at = doc.indexOf(title);
  assert.ok(at >= 0, `PAGES.md has a section ${title}`);
  const rest = doc.slice(at).split('\n## ')[0];
  return [...rest.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
}

describe('protocol/PAGES.md', () => {
  for (const [section, names] of [
    ['## Page API ↔ bridge', wire.PAGE],
    ['## Bridge ↔ service worker', wire.FRAME],
    ['## Service worker ↔ host', wire.HOST],
  ]) {
    it(`lists every name of ${section.slice(3)} and no other`, () => {
      assert.deepEqual([...new Set(table(section))].sort(), [...new Set(Object.values(names))].sort());
    });
  }

  it('names the ports and the handshake as wire-names.js does', () => {
    assert.match(doc, new RegExp(`PAGE_PORT \\("${wire.PAGE_PORT}"\\)`));
    assert.match(doc, new RegExp(`\\(\`${wire.HANDSHAKE}\`\\)`));
  });

  it('leaves no message type as a bare string in the page API, the bridge or the worker', () => {
    for (const file of ['page/ferry-main.js', 'content/bridge.js', 'background/pageactions.js']) {
      const src = readFileSync(join(ext, file), 'utf8');
      assert.doesNotMatch(src, /\bt: '[a-z_]+'/, `${file} writes a message type as a literal`);
      assert.doesNotMatch(src, /msg\.t === '[a-z_]+'/, `${file} compares a message type with a literal`);
    }
  });
});
