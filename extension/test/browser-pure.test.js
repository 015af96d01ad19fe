// The pure parts of the browser tools: the JSON-safe runner, the restricted
// URL check, tab filters, errors, and the content script's selectors and
// fingerprints (a classic script, loaded here with vm as Chrome injects it).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { runUserCode } from '../background/browser/user-code.js';
import { restrictedReason, scriptingFailureReason } from '../background/browser/urls.js';
import { tabFilter, describeTab } from '../background/browser/tab-filter.js';
import { BrowserError, BROWSER_ERROR, fromReport } from '../background/browser/errors.js';
import { toRpcError } from '../lib/host-errors.js';
import { encodeBase64 } from '../background/browser/base64.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

describe('runUserCode', () => {
  it('takes an expression or a function body, and awaits promises', async () => {
    assert.deepEqual(await runUserCode('1 + 2'), { ok: true, value: 3, type: 'number', truncated: false });
    assert.deepEqual((await runUserCode('const a = 2; return a * 3')).value, 6);
    assert.deepEqual((await runUserCode('Promise.resolve({a: [1]})')).value, { a: [1] });
    assert.deepEqual((await runUserCode('await null; return "x"')).value, 'x');
    assert.equal((await runUserCode('undefined')).type, 'undefined');
  });

  it('makes values JSON-safe', async () => {
    const r = await runUserCode(`(() => { const o = {s: Symbol('k'), f: function named() {}, n: NaN, i: -Infinity, b: 5n,
      d: new Date(0), re: /x/g, m: new Map([[1, 'a']]), set: new Set([1, 2]), e: new Error('boom'), ta: new Uint8Array([1, 2])};
      o.self = o; o.list = [o]; return o; })()`);
    assert.equal(r.ok, true);
    const v = r.value;
    assert.equal(v.s, '[Symbol k]');
    assert.equal(v.f, '[Function named]');
    assert.equal(v.n, 'NaN');
    assert.equal(v.i, '-Infinity');
    assert.equal(v.b, '5n');
    assert.equal(v.d, '1970-01-01T00:00:00.000Z');
    assert.equal(v.re, '/x/g');
    assert.deepEqual(v.m, { 1: 'a' });
    assert.deepEqual(v.set, [1, 2]);
    assert.equal(v.e.message, 'boom');
    assert.deepEqual(v.ta, [1, 2]);
    assert.equal(v.self, '[Circular]');
    assert.deepEqual(v.list, ['[Circular]']);
    assert.doesNotThrow(() => JSON.stringify(v));
  });

  it('bounds depth, items and bytes', async () => {
    const deep = await runUserCode('let o = {}; const t = o; for (let i = 0; i < 50; i++) { o.n = {}; o = o.n } return t', { maxDepth: 3 });
    assert.deepEqual(deep.value, { n: { n: { n: '[Object]' } } });
    assert.equal(deep.truncated, true);
    const many = await runUserCode('Array.from({length: 50}, (_, i) => i)', { maxItems: 10 });
    assert.equal(many.value.length, 11);
    assert.equal(many.value[10], '[40 more items]');
    const big = await runUserCode("'y'.repeat(5000)", { maxBytes: 1000, maxString: 100_000 });
    assert.ok(JSON.stringify(big.value).length < 1100);
    assert.equal(big.truncated, true);
    const huge = await runUserCode("Array.from({length: 1000}, () => 'z'.repeat(1000))", { maxBytes: 10_000 });
    assert.ok(JSON.stringify(huge.value).length < 13_000, String(JSON.stringify(huge.value).length));
  });

  it('reports errors with name, message and stack, and never throws', async () => {
    const e = await runUserCode('function f() { throw new TypeError("nope") } f()');
    assert.equal(e.ok, false);
    assert.equal(e.name, 'TypeError');
    assert.equal(e.message, 'nope');
    assert.match(e.stack, /at f/);
    const rej = await runUserCode('Promise.reject(new Error("later"))');
    assert.equal(rej.message, 'later');
    const syntax = await runUserCode('this is not (');
    assert.equal(syntax.name, 'SyntaxError');
    const thrownValue = await runUserCode('throw {code: 7}');
    assert.equal(thrownValue.ok, false);
    assert.equal(thrownValue.message, '{"code":7}');
  });

  it('is self-contained: it runs from its source text alone', async () => {
    const rebuilt = new Function(`return ${runUserCode.toString()}`)();
    assert.deepEqual((await rebuilt('[1, 2].length')).value, 2);
  });
});

describe('restrictedReason', () => {
  for (const url of ['chrome://version', 'chrome://settings/', 'chrome-extension://abc/options.html', 'devtools://devtools/x',
    'view-source:https://example.com/', 'https://chromewebstore.google.com/detail/x', 'https://chrome.google.com/webstore/detail/x',
    'about:settings', 'edge://settings', 'file:///etc/hosts']) {
    it(`refuses ${url}`, () => assert.ok(restrictedReason(url), url));
  }
  for (const url of ['https://example.com/', 'http://127.0.0.1:8080/x', 'about:blank', 'https://chrome.google.com/search', 'https://google.com/webstore']) {
    it(`allows ${url}`, () => assert.equal(restrictedReason(url), null));
  }
  it('allows file:// when the user granted file access', () => {
    assert.equal(restrictedReason('file:///tmp/a.html', { fileAccess: true }), null);
    assert.match(restrictedReason('file:///tmp/a.html'), /file URLs/);
  });
  it('maps the browser\'s scripting errors', () => {
    assert.equal(scriptingFailureReason('Cannot access a chrome:// URL'), 'restricted_page');
    assert.equal(scriptingFailureReason('The extensions gallery cannot be scripted.'), 'restricted_page');
    assert.equal(scriptingFailureReason('Cannot access contents of the page. Extension manifest must request permission to access the respective host.'), 'no_permission');
    assert.equal(scriptingFailureReason('No tab with id: 5.'), 'no_tab');
    assert.equal(scriptingFailureReason('something else'), null);
  });
});

describe('tabFilter', () => {
  const tabs = [
    { id: 1, windowId: 1, url: 'https://Example.com/a', title: 'Alpha', active: true, audible: false, status: 'complete' },
    { id: 2, windowId: 1, url: 'https://other.org/b', title: 'Beta music', active: false, audible: true, status: 'loading' },
    { id: 3, windowId: 2, pendingUrl: 'https://example.com/c', title: 'Gamma', active: true },
  ];
  const ids = (params) => tabs.filter(tabFilter(params)).map((t) => t.id);
  it('matches regexes case-insensitively and the flags exactly', () => {
    assert.deepEqual(ids({}), [1, 2, 3]);
    assert.deepEqual(ids({ url_pattern: 'example\\.COM' }), [1, 3]);
    assert.deepEqual(ids({ title_pattern: '^beta' }), [2]);
    assert.deepEqual(ids({ active: true }), [1, 3]);
    assert.deepEqual(ids({ active: false }), [2]);
    assert.deepEqual(ids({ audible: true }), [2]);
    assert.deepEqual(ids({ window_id: 2 }), [3]);
    assert.deepEqual(ids({ url_pattern: 'example', window_id: 1, active: true }), [1]);
  });
  it('refuses a regex that does not compile as invalid', () => {
    assert.throws(() => tabFilter({ url_pattern: '(' }), (e) => e.code === BROWSER_ERROR && e.data.reason === 'invalid');
  });
  it('describes tabs in the wire shape', () => {
    assert.deepEqual(describeTab(tabs[2]), { tab_id: 3, window_id: 2, url: 'https://example.com/c', title: 'Gamma', active: true, audible: false, status: 'unknown' });
  });
});

describe('BrowserError', () => {
  it('becomes JSON-RPC -32010 with data.reason', () => {
    const err = new BrowserError('stale_ref', 'take a new snapshot', { ref: 'e3' });
    assert.deepEqual(toRpcError(err), { code: -32010, message: 'take a new snapshot', data: { reason: 'stale_ref', ref: 'e3' } });
    assert.deepEqual(toRpcError(fromReport({ reason: 'element_state', message: 'covered', state: 'covered' })),
      { code: -32010, message: 'covered', data: { reason: 'element_state', state: 'covered' } });
  });
  it('base64 matches Buffer', () => {
    const bytes = new Uint8Array(100_000).map((_, i) => (i * 7) & 255);
    assert.equal(encodeBase64(bytes), Buffer.from(bytes).toString('base64'));
  });
});

// ---- the content script's selectors, on a small fake DOM ----

function loadSelectors() {
  const context = { globalThis: {} };
  context.globalThis = context;
  vm.createContext(context);
  vm.runInContext(readFileSync(join(root, 'content', 'selectors.js'), 'utf8'), context);
  return context.FerrySelectors;
}

/** Elements with just what selectors.js reads. */
function el(tag, attrs = {}, kids = []) {
  const e = {
    nodeType: 1, localName: tag, attrs, children: kids, parentElement: null, parentNode: null,
    getAttribute: (n) => (Object.hasOwn(attrs, n) ? attrs[n] : null),
    hasAttributes: () => Object.keys(attrs).length > 0,
    get attributes() {
      return Object.entries(attrs).map(([name, value]) => ({ name, value }));
    },
  };
  for (const k of kids) {
    k.parentElement = e;
    k.parentNode = e;
  }
  return e;
}

function fakeDocument(body) {
  const html = el('html', {}, [body]);
  const all = [];
  (function walk(e) {
    all.push(e);
    e.children.forEach(walk);
  })(html);
  const doc = { nodeType: 9, documentElement: html, getElementsByTagName: () => all };
  for (const e of all) e.getRootNode = () => doc;
  html.parentElement = null;
  html.parentNode = doc;
  return doc;
}

const cssEscape = (s) => s.replace(/[^a-zA-Z0-9_-]/g, (c) => `\\${c}`);

describe('selectors', () => {
  const S = loadSelectors();

  it('prefers #id, then a stable attribute, a unique tag, a unique class, then an nth-of-type path', () => {
    const byId = el('div', { id: 'cart' });
    const byName = el('input', { name: 'q', class: 'x' });
    const byTestId = el('button', { 'data-testid': 'buy', name: 'dup' });
    const dupName = el('input', { name: 'dup' });
    const h1 = el('h1');
    const card2 = el('div', { class: 'card' });
    const p = el('p');
    const card3 = el('div', { class: 'card' }, [p]);
    const uniqueClass = el('div', { class: 'card promo' });
    const generated = el('div', { class: 'css-1a2b3c' });
    const sameId1 = el('span', { id: 'twin' });
    const sameId2 = el('span', { id: 'twin' });
    const section = el('section', {}, [el('div', { class: 'card' }), card2, card3, uniqueClass, generated, sameId1, sameId2]);
    const body = el('body', {}, [byId, el('form', {}, [byName, byTestId, dupName]), h1, section, el('section')]);
    const doc = fakeDocument(body);
    const { selectorFor } = S.createSelectors(doc, { cssEscape });
    assert.equal(selectorFor(byId), '#cart');
    assert.equal(selectorFor(byName), '[name="q"]');
    assert.equal(selectorFor(byTestId), '[data-testid="buy"]');
    assert.equal(selectorFor(dupName), 'form > input:nth-of-type(2)');
    assert.equal(selectorFor(h1), 'h1');
    assert.equal(selectorFor(card2), 'body > section:nth-of-type(1) > div:nth-of-type(2)');
    assert.equal(selectorFor(p), 'body > section:nth-of-type(1) > div:nth-of-type(3) > p');
    assert.equal(selectorFor(uniqueClass), '.promo');
    assert.equal(selectorFor(generated), 'body > section:nth-of-type(1) > div:nth-of-type(5)');
    assert.equal(selectorFor(sameId2), 'body > section:nth-of-type(1) > span:nth-of-type(2)');
    assert.equal(selectorFor(body), 'body');
  });

  it('quotes attribute values safely', () => {
    assert.equal(S.quoteAttr('a"b\\c'), '"a\\"b\\\\c"');
  });

  it('computes roles and names the way snapshots show them', () => {
    const fp = (info) => ({ ...S.fingerprint({ tag: 'div', role: '', ...info }) });
    assert.deepEqual(fp({ tag: 'button', text: '  Add   to cart ' }), { tag: 'button', role: 'button', name: 'Add to cart' });
    assert.deepEqual(fp({ tag: 'a', href: true, text: 'Home' }), { tag: 'a', role: 'link', name: 'Home' });
    assert.deepEqual(fp({ tag: 'input', type: 'checkbox', label: 'Agree' }), { tag: 'input', role: 'checkbox', name: 'Agree' });
    // A field's name never comes from what is typed into it.
    assert.deepEqual(fp({ tag: 'input', type: 'text', placeholder: 'Search', text: 'typed' }), { tag: 'input', role: 'textbox', name: 'Search' });
    assert.deepEqual(fp({ tag: 'div', contentEditable: true, ariaLabel: 'Notes', text: 'typed' }), { tag: 'div', role: 'textbox', name: 'Notes' });
    // Landmarks are named by their label, not by everything inside them.
    assert.deepEqual(fp({ tag: 'main', text: 'lots of text' }), { tag: 'main', role: 'main', name: '' });
    assert.deepEqual(fp({ tag: 'nav', ariaLabel: 'Primary' }), { tag: 'nav', role: 'navigation', name: 'Primary' });
    assert.deepEqual(fp({ tag: 'select', multiple: true, label: 'Sizes' }), { tag: 'select', role: 'listbox', name: 'Sizes' });
    assert.deepEqual(fp({ tag: 'div', role: 'button tab', text: 'Go' }), { tag: 'div', role: 'button', name: 'Go' });
    assert.equal(fp({ tag: 'button', text: 'x'.repeat(200) }).name.length, 80);
  });

  it('says why a fingerprint no longer matches', () => {
    const then = { tag: 'button', role: 'button', name: 'Save' };
    assert.equal(S.fingerprintMismatch(then, { ...then }), null);
    assert.match(S.fingerprintMismatch(then, { ...then, name: 'Delete' }), /"Save".*"Delete"/);
    assert.match(S.fingerprintMismatch(then, { ...then, tag: 'a' }), /<button>.*<a>/);
    assert.match(S.fingerprintMismatch(then, { ...then, role: 'link' }), /role/);
  });
});
