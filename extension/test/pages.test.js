// Rules of the extension's own pages: a strict content security policy, and
// every control labelled so that a screen reader names it and a click on the
// label reaches it.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(join(root, 'manifest.json'), 'utf8'));

function htmlFiles(dir = root) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (!['test', 'testing', 'node_modules'].includes(name)) out.push(...htmlFiles(path));
    } else if (name.endsWith('.html')) out.push(path);
  }
  return out;
}

const directives = (policy) => new Map(policy.split(';').map((d) => d.trim()).filter(Boolean).map((d) => {
  const [name, ...values] = d.split(/\s+/);
  return [name, values];
}));

describe('content security policy', () => {
  it('lets extension pages run only their own files', () => {
    const policy = manifest.content_security_policy?.extension_pages;
    assert.ok(policy, 'manifest.content_security_policy.extension_pages');
    const d = directives(policy);
    assert.deepEqual(d.get('script-src'), ["'self'"]);
    assert.deepEqual(d.get('object-src'), ["'none'"]);
    assert.deepEqual(d.get('base-uri'), ["'none'"]);
    assert.deepEqual(d.get('default-src'), ["'self'"]);
    assert.deepEqual(d.get('style-src'), ["'self'"]);
    for (const [name, values] of d) {
      for (const v of values) {
        assert.doesNotMatch(v, /unsafe-|^\*$|^https?:$/, `${name} ${v}`);
      }
    }
  });

  it('needs no inline script or style in any page', () => {
    for (const file of htmlFiles()) {
      const html = readFileSync(file, 'utf8');
      const where = relative(root, file);
      assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, `${where}: inline <script>`);
      assert.doesNotMatch(html, /<style\b|\sstyle=/, `${where}: inline style`);
      assert.doesNotMatch(html, /\son[a-z]+=/, `${where}: inline event handler`);
      assert.doesNotMatch(html, /javascript:/i, `${where}: javascript: URL`);
    }
  });
});

/** The controls of an HTML page that a person fills in, with whether a label names them. */
export function unlabelled(html) {
  const labelFor = new Set([...html.matchAll(/<label\b[^>]*\bfor="([^"]+)"/g)].map((m) => m[1]));
  const insideLabel = [];
  for (const m of html.matchAll(/<label\b[^>]*>[\s\S]*?<\/label>/g)) insideLabel.push([m.index, m.index + m[0].length]);
  const out = [];
  for (const m of html.matchAll(/<(input|select|textarea)\b([^>]*)>/g)) {
    const attrs = m[2];
    if (/\btype="hidden"/.test(attrs)) continue;
    const id = attrs.match(/\bid="([^"]+)"/)?.[1];
    const ok = (id && labelFor.has(id)) || /\baria-label(?:ledby)?="[^"]+"/.test(attrs) ||
      insideLabel.some(([a, b]) => m.index > a && m.index < b);
    if (!ok) out.push(m[0]);
  }
  return out;
}

describe('labels and keyboard', () => {
  const pages = ['options/options.html', 'sidepanel/sidepanel.html'];

  for (const page of pages) {
    const html = readFileSync(join(root, page), 'utf8');

    it(`${page}: every control has a label`, () => {
      assert.ok(/<(input|select|textarea)\b/.test(html), 'the page has controls');
      assert.deepEqual(unlabelled(html), []);
    });

    it(`${page}: every label points at a control that exists, and ids are unique`, () => {
      const ids = [...html.matchAll(/\bid="([^"]+)"/g)].map((m) => m[1]);
      assert.deepEqual(ids.filter((id, i) => ids.indexOf(id) !== i), [], 'duplicate ids');
      for (const m of html.matchAll(/<label\b[^>]*\bfor="([^"]+)"/g)) assert.ok(ids.includes(m[1]), `label for="${m[1]}"`);
      for (const m of html.matchAll(/aria-(?:describedby|labelledby|controls)="([^"]+)"/g)) {
        for (const id of m[1].split(/\s+/)) assert.ok(ids.includes(id), `aria reference to #${id}`);
      }
    });

    it(`${page}: every button has a name and a type, and nothing steals the tab order`, () => {
      for (const m of html.matchAll(/<button\b([^>]*)>([\s\S]*?)<\/button>/g)) {
        assert.match(m[1], /\btype="(button|submit)"/, m[0]);
        assert.ok(/data-i18n="/.test(m[1]) || /aria-label="/.test(m[1]) || m[2].trim(), `unnamed ${m[0]}`);
      }
      assert.doesNotMatch(html, /tabindex="[1-9]/, 'positive tabindex');
    });
  }

  it('finds what it is meant to find', () => {
    assert.deepEqual(unlabelled('<input id="a"><label for="b">B</label><input id="b"><label>C <input id="c"></label><input aria-label="D">'), ['<input id="a">']);
  });
});
