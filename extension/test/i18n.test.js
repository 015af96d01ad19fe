import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const localesDir = join(root, '_locales');
const load = (locale) => JSON.parse(readFileSync(join(localesDir, locale, 'messages.json'), 'utf8'));
const locales = readdirSync(localesDir).sort();
const en = load('en');

/** Extension sources that ship: tests and their helpers are not user-visible. */
function sources(dir = root) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (!['test', 'testing', '_locales', 'node_modules'].includes(name)) out.push(...sources(path));
    } else if (/\.(js|html|json)$/.test(name) && name !== 'package.json') {
      out.push(path);
    }
  }
  return out;
}

/** Message keys the code and pages ask for, with where they are asked. */
function usedKeys() {
  const patterns = [
    /\bt\(\s*'([^']+)'/g,
    /\bgetMessage\(\s*'([^']+)'/g,
    /data-i18n(?:-[a-z]+)?="([^"]+)"/g,
    /__MSG_([A-Za-z0-9_]+)__/g,
  ];
  const keys = new Map();
  for (const file of sources()) {
    const raw = readFileSync(file, 'utf8');
    // Comments may describe the syntax ("data-i18n=\"key\"") without using a key.
    const text = file.endsWith('.js') ? raw.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '') : raw;
    for (const re of patterns) {
      for (const m of text.matchAll(re)) {
        if (!m[1].startsWith('@@')) keys.set(m[1], relative(root, file));
      }
    }
  }
  return keys;
}

const placeholderTokens = (message) =>
  new Set([...message.replaceAll('$$', '').matchAll(/\$([A-Za-z0-9_@]+)\$/g)].map((m) => m[1].toLowerCase()));

describe('locales', () => {
  it('ships en, zh_CN, zh_TW and es', () => {
    for (const locale of ['en', 'zh_CN', 'zh_TW', 'es']) assert.ok(locales.includes(locale), locale);
  });

  for (const locale of locales) {
    it(`${locale} has exactly the keys of en, each a non-empty message`, () => {
      const messages = load(locale);
      assert.deepEqual(Object.keys(messages).sort(), Object.keys(en).sort());
      for (const [key, entry] of Object.entries(messages)) {
        assert.equal(typeof entry.message, 'string', key);
        assert.ok(entry.message.trim().length > 0, `${locale}/${key} is empty`);
      }
    });

    it(`${locale} uses the same placeholders as en`, () => {
      const messages = load(locale);
      for (const [key, entry] of Object.entries(messages)) {
        const declared = Object.keys(entry.placeholders ?? {}).map((k) => k.toLowerCase()).sort();
        assert.deepEqual([...placeholderTokens(entry.message)].sort(), declared, `${locale}/${key}: tokens vs placeholders`);
        assert.deepEqual(
          Object.fromEntries(Object.entries(entry.placeholders ?? {}).map(([k, v]) => [k.toLowerCase(), v.content])),
          Object.fromEntries(Object.entries(en[key].placeholders ?? {}).map(([k, v]) => [k.toLowerCase(), v.content])),
          `${locale}/${key}: placeholder contents`,
        );
      }
    });
  }

  it('uses key names Chrome accepts, unique without regard to case', () => {
    const lower = new Set();
    for (const key of Object.keys(en)) {
      assert.match(key, /^[A-Za-z0-9_]+$/);
      assert.ok(!key.startsWith('@@'), key);
      assert.ok(!lower.has(key.toLowerCase()), `duplicate ${key}`);
      lower.add(key.toLowerCase());
    }
  });

  it('defines every key the code and pages use, and nothing they do not', () => {
    const used = usedKeys();
    assert.ok(used.size > 10, 'the scan found the keys in use');
    for (const [key, file] of used) assert.ok(Object.hasOwn(en, key), `${key} (used in ${file}) missing from en`);
    for (const key of Object.keys(en)) assert.ok(used.has(key), `${key} is defined but never used`);
  });

  it('translates: other locales differ from en where words are involved', () => {
    const same = (locale) => Object.keys(en).filter((k) => load(locale)[k].message === en[k].message && /[a-z]{3}/.test(en[k].message) && en[k].message !== 'Ferry');
    for (const locale of ['zh_CN', 'zh_TW', 'es']) assert.deepEqual(same(locale), [], locale);
  });

  it('keeps Simplified and Traditional Chinese apart', () => {
    // Characters whose forms differ between the two scripts.
    const simplifiedOnly = /[这设连据务扩览终请无问题应协议错误为档际]/;
    const traditionalOnly = /[這設連據務擴覽終請無問題應協議錯誤為檔際]/;
    for (const [key, { message }] of Object.entries(load('zh_CN'))) assert.doesNotMatch(message, traditionalOnly, `zh_CN/${key}`);
    for (const [key, { message }] of Object.entries(load('zh_TW'))) assert.doesNotMatch(message, simplifiedOnly, `zh_TW/${key}`);
  });
});
