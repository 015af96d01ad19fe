// Rules of the extension's layout that a reviewer would otherwise have to
// check by eye.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PINNED_EXTENSION_ID } from '../options/status-view.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(join(root, 'manifest.json'), 'utf8'));

function files(dir, ext) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (!['test', 'testing', 'node_modules'].includes(name)) out.push(...files(path, ext));
    } else if (name.endsWith(ext)) out.push(path);
  }
  return out;
}

const stripComments = (code) => code.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');

describe('manifest', () => {
  it('is MV3 with exactly the permissions Ferry needs', () => {
    assert.equal(manifest.manifest_version, 3);
    // tabs, scripting, offscreen and all sites: the browser tools (README, "Permissions");
    // sidePanel: the chat opens beside the page from the toolbar button;
    // declarativeNetRequestWithHostAccess: a tab the agent opens stops at a redirect
    // to another site until the host has judged that hop.
    assert.deepEqual(manifest.permissions, ['nativeMessaging', 'tabs', 'scripting', 'offscreen', 'sidePanel', 'declarativeNetRequestWithHostAccess']);
    assert.deepEqual(manifest.host_permissions, ['<all_urls>']);
    assert.equal(manifest.optional_permissions, undefined);
    assert.equal(manifest.default_locale, 'en');
    assert.match(manifest.name, /^__MSG_\w+__$/);
    assert.match(manifest.description, /^__MSG_\w+__$/);
    assert.deepEqual(manifest.background, { service_worker: 'background/service-worker.js', type: 'module' });
    assert.deepEqual(manifest.options_ui, { page: 'options/options.html', open_in_tab: true });
    assert.ok(manifest.action?.default_title);
  });

  it('declares only the tiny console hook for every page, the page API and its bridge and the dialog hook and its relay for http(s) pages, and the sandbox page', () => {
    const web = ['http://*/*', 'https://*/*'];
    assert.deepEqual(manifest.content_scripts, [{
      matches: ['<all_urls>'], js: ['content/console-hook.js'], run_at: 'document_start', world: 'MAIN', all_frames: false,
    }, {
      // JavaScript dialogs: noticed before they block, answered where Ferry drives (content/dialogs.js).
      matches: web, js: ['content/dialogs.js'], run_at: 'document_start', world: 'MAIN', all_frames: true,
    }, {
      // window.ferry first, in the MAIN world (WebMCP before it, taken and hidden by
      // it); the bridge that hands it its private port and the wire names, after the
      // element rules it checks targets by.
      matches: web, js: ['page/webmcp.js', 'page/ferry-main.js'], run_at: 'document_start', world: 'MAIN', all_frames: true,
    }, {
      matches: web, js: ['lib/wire-names.js', 'content/element-state.js', 'content/bridge.js'], run_at: 'document_start', all_frames: true,
    }, {
      matches: web, js: ['content/dialog-relay.js'], run_at: 'document_start', all_frames: true,
    }]);
    assert.ok(readFileSync(join(root, 'content', 'dialogs.js'), 'utf8').length < 8000, 'the dialog hook runs in every page: keep it small');
    assert.ok(readFileSync(join(root, 'content', 'console-hook.js'), 'utf8').length < 4000, 'the hook runs in every page: keep it small');
    assert.deepEqual(manifest.sandbox, { pages: ['sandbox/sandbox.html'] });
  });

  it('pins the extension ID with its key', () => {
    // Chrome's ID: the first 128 bits of SHA-256 of the public key, hex digits mapped 0-f → a-p.
    const digest = createHash('sha256').update(Buffer.from(manifest.key, 'base64')).digest('hex').slice(0, 32);
    const id = [...digest].map((c) => String.fromCharCode(97 + parseInt(c, 16))).join('');
    assert.equal(id, 'hbkoapgnaiamicpgipblnghgmidgcmoc');
    assert.equal(PINNED_EXTENSION_ID, id);
  });

  it('names files that exist', () => {
    const declared = [
      manifest.background.service_worker, manifest.options_ui.page, manifest.side_panel.default_path, ...manifest.sandbox.pages,
      ...manifest.content_scripts.flatMap((c) => c.js),
    ];
    for (const file of declared) {
      assert.ok(existsSync(join(root, file)), file);
    }
  });

  it('is fit for the Chrome Web Store: icons of every size it asks for, name and description in four languages within its limits', () => {
    // PNG width and height sit at bytes 16-23 of the IHDR chunk.
    const size = (file) => { const b = readFileSync(join(root, file)); return [b.readUInt32BE(16), b.readUInt32BE(20)]; };
    for (const px of ['16', '32', '48', '128']) {
      assert.equal(manifest.icons[px], `icons/icon${px}.png`);
      assert.deepEqual(size(manifest.icons[px]), [Number(px), Number(px)], manifest.icons[px]);
    }
    for (const [px, file] of Object.entries(manifest.action.default_icon)) assert.deepEqual(size(file), [Number(px), Number(px)], file);
    assert.match(manifest.version, /^\d+(\.\d+){0,3}$/, 'Chrome takes only dotted integers as a version');
    for (const locale of ['en', 'zh_CN', 'zh_TW', 'es']) {
      const messages = JSON.parse(readFileSync(join(root, '_locales', locale, 'messages.json'), 'utf8'));
      const name = messages[manifest.name.slice(6, -2)]?.message;
      const description = messages[manifest.description.slice(6, -2)]?.message;
      assert.ok(name && [...name].length <= 75, `${locale}: name within 75 characters`);
      assert.ok(description && [...description].length <= 132, `${locale}: description within the store's 132 characters`);
    }
    assert.ok(existsSync(join(root, 'PRIVACY.md')), 'the store asks for a privacy statement: extension/PRIVACY.md');
  });

  it('holds no private key material', () => {
    for (const file of files(root, '')) {
      assert.doesNotMatch(readFileSync(file, 'utf8'), /PRIVATE KEY/, relative(root, file));
    }
  });
});

describe('source rules', () => {
  it('calls chrome.* only from lib/chrome-api.js', () => {
    for (const file of files(root, '.js')) {
      if (relative(root, file) === join('lib', 'chrome-api.js')) continue;
      // A declared content script cannot import modules: the bridge opens its one runtime port itself.
      if (relative(root, file) === join('content', 'bridge.js')) {
        assert.deepEqual(stripComments(readFileSync(file, 'utf8')).match(/\bchrome\s*\.[\w.]+/g), ['chrome.runtime.connect']);
        continue;
      }
      // Nor can the dialog relay: it sends its page's dialogs to the worker itself.
      if (relative(root, file) === join('content', 'dialog-relay.js')) {
        assert.deepEqual(stripComments(readFileSync(file, 'utf8')).match(/\bchrome\s*\.[\w.]+/g), ['chrome.runtime.sendMessage']);
        continue;
      }
      assert.doesNotMatch(stripComments(readFileSync(file, 'utf8')), /\bchrome\s*\./, relative(root, file));
    }
  });

  it('never renders markup from strings', () => {
    for (const file of [...files(root, '.js'), ...files(root, '.html')]) {
      assert.doesNotMatch(
        stripComments(readFileSync(file, 'utf8')),
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment|setHTML|parseHTML|\.srcdoc\b/,
        relative(root, file),
      );
    }
  });

  it('has only relative ES module imports (no packages, no build step)', () => {
    for (const file of files(root, '.js')) {
      for (const m of readFileSync(file, 'utf8').matchAll(/^\s*import\s[^'"]*['"]([^'"]+)['"]/gm)) {
        assert.match(m[1], /^\.\.?\//, `${relative(root, file)} imports ${m[1]}`);
        assert.ok(existsSync(join(dirname(file), m[1])), `${relative(root, file)}: ${m[1]} exists`);
      }
    }
  });

  it('gives the options page the ids the status code fills', () => {
    const html = readFileSync(join(root, 'options', 'options.html'), 'utf8');
    for (const id of ['host-status', 'host-status-text', 'host-version', 'host-protocol', 'host-data-dir', 'host-database', 'host-help', 'host-retry', 'extension-id']) {
      assert.match(html, new RegExp(`id="${id}"`), id);
    }
  });
});
