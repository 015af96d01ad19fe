import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  breadcrumb, downloadName, fileBytes, normalizeFolder, parentFolder, sortEntries, usageView,
} from '../options/workspace-logic.js';

describe('options workspace logic', () => {
  it('normalises folders and walks up', () => {
    assert.equal(normalizeFolder(''), '/');
    assert.equal(normalizeFolder('./a//b/'), '/a/b');
    assert.equal(parentFolder('/a/b'), '/a');
    assert.equal(parentFolder('/a'), '/');
    assert.equal(parentFolder('/'), '/');
  });

  it('builds the breadcrumb from the root', () => {
    assert.deepEqual(breadcrumb('/notes/2024'), [
      { name: '/', path: '/' }, { name: 'notes', path: '/notes' }, { name: '2024', path: '/notes/2024' },
    ]);
    assert.deepEqual(breadcrumb('/'), [{ name: '/', path: '/' }]);
  });

  it('names downloads after the file', () => {
    assert.equal(downloadName('/notes/todo.md'), 'todo.md');
    assert.equal(downloadName(''), 'file');
  });

  it('turns text and data URLs into bytes', () => {
    const text = fileBytes({ mime: 'text/markdown; charset=utf-8', text: 'ü<b>' });
    assert.equal(text.mime, 'text/markdown; charset=utf-8');
    assert.deepEqual([...text.bytes], [0xc3, 0xbc, 0x3c, 0x62, 0x3e]);
    const bin = fileBytes({ mime: 'image/png', data_url: 'data:image/png;base64,iVBORwAB' });
    assert.equal(bin.mime, 'image/png');
    assert.deepEqual([...bin.bytes], [0x89, 0x50, 0x4e, 0x47, 0, 1]);
    assert.deepEqual([...fileBytes({ data_url: 'data:,a%20b' }).bytes], [0x61, 0x20, 0x62]);
    assert.throws(() => fileBytes({ mime: 'x/y' }), /without text or a data URL/);
    assert.throws(() => fileBytes({ data_url: 'data:x' }), /no comma/);
  });

  it('shows usage against the quota', () => {
    assert.deepEqual(usageView(0, 100), { percent: 0, level: 'ok' });
    assert.deepEqual(usageView(50, 100), { percent: 50, level: 'ok' });
    assert.deepEqual(usageView(85, 100), { percent: 85, level: 'high' });
    assert.deepEqual(usageView(120, 100), { percent: 100, level: 'full' });
    assert.deepEqual(usageView(1, 3), { percent: 33.3, level: 'ok' });
    assert.deepEqual(usageView(5, 0), { percent: 0, level: 'ok' });
  });

  it('lists folders before files', () => {
    const got = sortEntries([{ name: 'b', type: 'file' }, { name: 'z', type: 'dir' }, { name: 'a', type: 'file' }]);
    assert.deepEqual(got.map((e) => e.name), ['z', 'a', 'b']);
  });
});
