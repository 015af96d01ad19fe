// browser.page.* and browser.script.execute: the work that happens inside a
// tab, through chrome.scripting, and the sandbox through the offscreen document.

import { fail, fromReport, BrowserError } from './errors.js';
import { resolveTab, waitForLoad, getTab, MAX_WAIT_MS, pinHost, hostOf } from './tabs.js';
import { restrictedReason, scriptingFailureReason } from './urls.js';
import { DEFAULT_LIMITS, runUserCode } from './user-code.js';
import { encodeBase64 } from './base64.js';
import { checkDocument, currentDocument, documentChanged, documentParam, injectionTarget } from './document.js';
import { createDialogs, createLeaving } from './dialogs.js';

export const CONTENT_FILES = ['content/element-state.js', 'content/selectors.js', 'content/content.js', 'content/capture.js', 'content/snapshot.js'];
export const OFFSCREEN_PATH = 'offscreen/offscreen.html';
export const OFFSCREEN_TARGET = 'ferry-offscreen';
export const SCRIPT_TIMEOUT_MS = 30_000;
const CONTENT_TIMEOUT_MS = 30_000;

// Runs in the content script's isolated world (serialized by executeScript).
// origin, for work bound to a document, is checked where the work runs
// (background/browser/document.js says why).
function callContent(method, params, origin) {
  if (origin && globalThis.location.origin !== origin) return { changed: true, origin: globalThis.location.origin };
  const c = globalThis.FerryContent;
  if (!c) return { missing: true };
  return c.call(method, params);
}

// Runs in the page's MAIN world: the console hook's reader.
function readConsole() {
  const read = window[Symbol.for('ferry.console')];
  return typeof read === 'function' ? { hooked: true, messages: read() } : { hooked: false, messages: [] };
}

function withTimeout(promise, ms, timers, onTimeout) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = timers.setTimeout(() => reject(onTimeout()), ms);
    }),
  ]).finally(() => timers.clearTimeout(timer));
}

function timeoutParam(params, fallback) {
  const t = params?.timeout_ms ?? fallback;
  if (!(Number.isFinite(t) && t > 0)) throw fail('invalid', 'timeout_ms must be a positive number of milliseconds');
  return Math.min(t, 300_000);
}

export function createPageMethods(api, { timers = globalThis, dialogs = createDialogs(api), leaving = createLeaving(api, dialogs, { timers }) } = {}) {
  /** The tab, checked scriptable; throws restricted_page with its URL. */
  async function scriptableTab(params) {
    const tab = await resolveTab(api, params);
    const url = tab.url || tab.pendingUrl || '';
    let fileAccess = false;
    if (url.startsWith('file:')) fileAccess = await api.isAllowedFileSchemeAccess();
    const why = restrictedReason(url, { fileAccess });
    if (why) throw fail('restricted_page', `cannot work in ${url}: ${why}`, { url });
    return tab;
  }

  /** The injection's result in frame 0, or in doc only when the work is bound to it. */
  async function inject(tab, injection, doc = null) {
    return (await injectFull(tab, injection, doc))?.result;
  }

  async function injectFull(tab, injection, doc = null) {
    try {
      const results = await api.executeScript({ target: injectionTarget(tab, doc), ...injection });
      return results?.[0];
    } catch (err) {
      if (doc && /No document with id/i.test(String(err?.message))) throw documentChanged(tab, doc);
      const reason = scriptingFailureReason(err?.message);
      const url = tab.url || '';
      if (reason === 'restricted_page') throw fail(reason, `cannot work in ${url}: ${err.message}`, { url });
      if (reason === 'no_permission') {
        let origin = url;
        try {
          origin = new URL(url).origin;
        } catch {
          // keep the URL
        }
        throw fail(reason, `Ferry has no permission for ${origin}: ${err.message}`, { origin });
      }
      if (reason === 'no_tab') throw fail(reason, `tab ${tab.id} closed or navigated away: ${err.message}`, { tab_id: tab.id });
      throw err;
    }
  }

  /** The tab of a call, checked scriptable, and the document it is bound to (checked too). */
  async function boundTab(params, { scriptable = true } = {}) {
    const doc = documentParam(params);
    const tab = scriptable ? await scriptableTab(params) : await resolveTab(api, params);
    await checkDocument(api, tab, doc);
    return { tab, doc };
  }

  /**
   * Calls content.js (injecting it on first use in this document). A page that
   * waits behind a dialog fails the call at once with the dialog (dialog_open);
   * dialogs the call met and answered come with its result as `dialogs`.
   */
  async function content(params, method, args, { timeoutMs = CONTENT_TIMEOUT_MS } = {}) {
    const { tab, doc } = await boundTab(params);
    dialogs.check(tab.id);
    let documentId = '';
    const call = async () => {
      const r = await injectFull(tab, { func: callContent, args: [method, args, doc?.origin ?? ''] }, doc);
      documentId = r?.documentId ?? '';
      if (r?.result?.changed) throw documentChanged(tab, doc, r.result.origin);
      return r?.result;
    };
    const run = async () => {
      let r;
      try {
        r = await call();
      } catch (err) {
        // The document was being replaced (a navigation just committed): once
        // more, in the new one, unless the work belongs to the old one.
        if (doc || !/Frame with ID 0 was removed/i.test(String(err?.message))) throw err;
        await new Promise((resolve) => timers.setTimeout(resolve, 300));
        r = await call();
      }
      if (r?.missing) {
        await inject(tab, { files: CONTENT_FILES }, doc);
        r = await call();
      }
      if (!r || r.missing) throw new Error(`the content script did not answer ${method}`);
      if (!r.ok) throw fromReport(r.error);
      if (r.dialogs?.length && r.result && typeof r.result === 'object') r.result.dialogs = r.dialogs;
      return r.result;
    };
    const watch = dialogs.watch(tab.id);
    try {
      const result = await Promise.race([
        withTimeout(run(), timeoutMs, timers, () => fail('timeout', `the page did not answer ${method} within ${timeoutMs} ms (it may be busy)`)),
        watch.promise,
      ]);
      return { tab, result, documentId };
    } finally {
      watch.stop();
    }
  }

  /** Waits for a navigation's load, or until the page stops behind a dialog of the person's. */
  async function loaded(tab, wait) {
    const watch = dialogs.watch(tab.id);
    try {
      return await Promise.race([wait, watch.promise.catch(() => ({ timedOut: false, dialog: dialogs.open(tab.id) }))]);
    } finally {
      watch.stop();
    }
  }

  function pick(params, keys) {
    const out = {};
    for (const k of keys) if (params[k] !== undefined) out[k] = params[k];
    return out;
  }

  /** history.back()/forward() inside the page; false when there is no entry that way. */
  async function historyStep(tab, action) {
    if (restrictedReason(tab.url ?? '')) return false;
    const r = await inject(tab, {
      func: (dir) => {
        const nav = globalThis.navigation;
        if (nav && !(dir === 'back' ? nav.canGoBack : nav.canGoForward)) return false;
        if (dir === 'back') history.back();
        else history.forward();
        return true;
      },
      args: [action],
    }).catch(() => false);
    return r === true;
  }

  // ---- sandbox ----
  let offscreenReady = null;
  async function ensureOffscreen() {
    if (!offscreenReady) {
      offscreenReady = (async () => {
        if (!(await api.hasOffscreenDocument(OFFSCREEN_PATH))) {
          await api.createOffscreenDocument(OFFSCREEN_PATH, ['IFRAME_SCRIPTING'],
            'Runs the agent\'s execute_script code in a sandboxed frame without access to pages or extension APIs.');
        }
      })();
      offscreenReady.catch(() => {
        offscreenReady = null;
      });
    }
    return offscreenReady;
  }

  async function killOffscreen() {
    offscreenReady = null;
    try {
      await api.closeOffscreenDocument();
    } catch {
      // already closed
    }
  }

  async function runInSandbox(code, timeoutMs) {
    await ensureOffscreen();
    // The sandbox ends the worker at timeoutMs itself; the outer limit only
    // catches a sandbox that stopped answering, and closes the document.
    const reply = api.sendRuntimeMessage({ target: OFFSCREEN_TARGET, type: 'sandbox.run', code, limits: DEFAULT_LIMITS, timeoutMs });
    let r;
    try {
      r = await withTimeout(reply, timeoutMs + 2000, timers, () => new BrowserError('timeout', 'stuck'));
    } catch (err) {
      if (err instanceof BrowserError) {
        await killOffscreen();
        return { ok: false, timeout: true };
      }
      throw err;
    }
    if (!r?.ok) throw new Error(r?.error?.message ?? 'the sandbox did not answer');
    return r.outcome;
  }

  /** A navigation's result: where the tab is now, and the dialogs it met on the way. */
  async function arrived(tab, { timedOut, dialog }, started, undrive) {
    undrive();
    const now = await getTab(api, tab.id);
    const met = dialog ? [] : await leaving.met(now, started);
    return {
      tab_id: now.id, url: now.url ?? '', title: now.title ?? '', status: now.status ?? 'unknown', timed_out: !!timedOut,
      ...(met.length ? { dialogs: met } : {}),
      ...(dialog ? { dialog, note: 'the page stopped loading behind a dialog of its own, which waits for a person' } : {}),
    };
  }

  return {
    async 'browser.page.capture'(params = {}) {
      const { tab, result } = await content(params, 'capture', pick(params, ['selector', 'max_chars', 'max_elements']));
      return { tab_id: tab.id, ...result };
    },

    async 'browser.script.execute'(params = {}) {
      const { code, target = 'page' } = params;
      if (typeof code !== 'string' || code.trim() === '') throw fail('invalid', 'code is required');
      if (target !== 'page' && target !== 'sandbox') throw fail('invalid', `target must be "page" or "sandbox", not ${JSON.stringify(target)}`);
      const timeoutMs = timeoutParam(params, SCRIPT_TIMEOUT_MS);
      let outcome;
      let tab = null;
      if (target === 'sandbox') {
        outcome = await runInSandbox(code, timeoutMs);
        if (outcome?.timeout) {
          throw fail('timeout', `the sandbox script did not finish within ${timeoutMs} ms and was stopped`, { target, stopped: true });
        }
      } else {
        let doc;
        ({ tab, doc } = await boundTab(params));
        outcome = await withTimeout(
          inject(tab, { world: 'MAIN', func: runUserCode, args: [code, DEFAULT_LIMITS, { origin: doc?.origin ?? '' }] }, doc),
          timeoutMs, timers,
          () => fail('timeout', `the page script did not finish within ${timeoutMs} ms; it may still be running in the page (a page's code cannot be stopped from outside)`, { target, stopped: false }),
        );
        if (outcome === undefined || outcome === null) {
          throw fail('script_error', 'the page returned no result (it navigated away or its Content-Security-Policy blocked the script)', { message: 'no result', stack: '' });
        }
        if (outcome.changed) throw documentChanged(tab, doc, outcome.origin);
      }
      if (!outcome.ok) {
        const csp = /unsafe-eval|Content Security Policy/i.test(outcome.message ?? '');
        throw fail('script_error', csp
          ? `the page's Content-Security-Policy forbids running code strings: ${outcome.message}`
          : `${outcome.name && outcome.name !== 'Error' ? `${outcome.name}: ` : ''}${outcome.message}`,
        { message: outcome.message, stack: outcome.stack ?? '', name: outcome.name });
      }
      const out = { value: outcome.value, type: outcome.type };
      if (outcome.truncated) out.truncated = true;
      if (tab) out.tab_id = tab.id;
      return out;
    },

    async 'browser.page.snapshot'(params = {}) {
      const { result } = await content(params, 'snapshot', pick(params, ['max_depth', 'max_nodes', 'offset', 'selector']));
      return result;
    },

    async 'browser.page.click'(params = {}) {
      return (await content(params, 'click', pick(params, ['ref', 'selector']))).result;
    },

    async 'browser.page.type'(params = {}) {
      return (await content(params, 'type', pick(params, ['ref', 'selector', 'text', 'clear', 'submit']))).result;
    },

    async 'browser.page.select'(params = {}) {
      return (await content(params, 'select', pick(params, ['ref', 'selector', 'values']))).result;
    },

    async 'browser.page.form'(params = {}) {
      return (await content(params, 'form', pick(params, ['ref', 'selector']))).result;
    },

    async 'browser.page.scroll'(params = {}) {
      return (await content(params, 'scroll', pick(params, ['ref', 'selector', 'pixels', 'direction']))).result;
    },

    async 'browser.page.info'(params = {}) {
      const tab = await scriptableTab(params);
      const open = dialogs.open(tab.id);
      const recent = dialogs.since(tab.id, 0).slice(-5);
      const extra = recent.length ? { dialogs: recent } : {};
      if (open) return { tab_id: tab.id, url: tab.url ?? '', title: tab.title ?? '', ready_state: null, dialog: open, ...extra };
      const { result, documentId } = await content({ ...params, tab_id: tab.id }, 'info', {});
      return { tab_id: tab.id, ...result, document_id: documentId, dialog: null, ...extra };
    },

    // What a call would act on, for the host to bind an approval to: cheap, and
    // answered for any tab (a page no script may enter has no document_id).
    async 'browser.page.document'(params = {}) {
      const tab = await resolveTab(api, params);
      const now = await currentDocument(api, tab);
      return { tab_id: tab.id, url: tab.url || tab.pendingUrl || '', title: tab.title ?? '', document_id: now.documentId };
    },

    async 'browser.page.network'(params = {}) {
      return (await content(params, 'network', {})).result;
    },

    async 'browser.page.console'(params = {}) {
      const { tab, doc } = await boundTab(params);
      const r = await inject(tab, { world: 'MAIN', func: readConsole }, doc);
      const out = { messages: r?.messages ?? [] };
      if (!r?.hooked) out.note = 'console capture starts with the page load; this page was loaded before Ferry was installed or enabled: reload it to capture its messages';
      return out;
    },

    async 'browser.page.navigate'(params = {}) {
      const { url, action } = params;
      if ((url === undefined) === (action === undefined)) throw fail('invalid', 'give either url or action (back, forward, reload)');
      if (action !== undefined && !['back', 'forward', 'reload'].includes(action)) {
        throw fail('invalid', `action must be back, forward or reload, not ${JSON.stringify(action)}`);
      }
      if (url !== undefined && (typeof url !== 'string' || url === '')) throw fail('invalid', 'url must be a non-empty string');
      const { tab } = await boundTab(params, { scriptable: false });
      const timeoutMs = Math.min(timeoutParam(params, MAX_WAIT_MS), MAX_WAIT_MS);
      await leaving.check(tab);
      const started = Date.now();
      const undrive = await leaving.drive(url ?? (action === 'reload' ? tab.url : ''));
      // Started before the navigation, so that its "loading" update is seen.
      const wait = loaded(tab, waitForLoad(api, tab.id, { timeoutMs, timers, requireLoading: true }));
      // A call the host's rule judges stops at a redirect to another host (tabs.js).
      const unpin = url !== undefined && params.stay_on_host ? await pinHost(api, tab.id, url) : async () => {};
      try {
        if (url !== undefined) await api.tabsUpdate(tab.id, { url });
        else if (action === 'back') await api.tabsGoBack(tab.id);
        else if (action === 'forward') await api.tabsGoForward(tab.id);
        else await api.tabsReload(tab.id);
      } catch (err) {
        const m = String(err?.message);
        if (/Cannot find a next page in history|cannot go (back|forward)/i.test(m)) {
          // The browser's own back skips entries of pages nobody interacted
          // with (Chrome's history intervention); the page's history does not.
          if (await historyStep(tab, action)) return arrived(tab, await wait, started, undrive);
          undrive();
          throw fail('invalid', `cannot go ${action}: there is no page that way in the tab's history`);
        }
        undrive();
        await unpin();
        if (/Invalid url|Cannot navigate/i.test(m)) throw fail('invalid', `cannot open ${url}: ${m}`);
        throw err;
      }
      const out = await arrived(tab, await wait, started, undrive);
      await unpin();
      if (url !== undefined && params.stay_on_host && /^https?:/i.test(out?.url ?? '') && hostOf(out.url) !== hostOf(url)) out.stopped_redirect = out.url;
      return out;
    },

    async 'browser.page.dialog'(params = {}) {
      const { action, text } = params;
      if (action !== 'accept' && action !== 'dismiss') throw fail('invalid', `action must be accept or dismiss, not ${JSON.stringify(action)}`);
      if (text !== undefined && typeof text !== 'string') throw fail('invalid', 'text must be a string');
      const { tab } = await boundTab(params);
      if (!(await leaving.arm(tab, action, text))) {
        throw fail('restricted_page', `the page in tab ${tab.id} has no dialog hook (it is not an http(s) page, or it loaded before Ferry was enabled: reload it)`, { url: tab.url ?? '' });
      }
      const recent = dialogs.since(tab.id, 0).slice(-3);
      return {
        tab_id: tab.id,
        armed: { action, ...(text !== undefined ? { text } : {}) },
        note: 'the next dialog of this page (alert, confirm, prompt, or the question before leaving it) gets this answer; repeat the action that opens it',
        ...(recent.length ? { recent } : {}),
      };
    },

    async 'browser.page.screenshot'(params = {}) {
      const { format = 'jpeg', quality = 70, max_width: maxWidth = 1280 } = params;
      if (format !== 'jpeg' && format !== 'png') throw fail('invalid', 'format must be jpeg or png');
      if (!(Number.isInteger(quality) && quality >= 1 && quality <= 100)) throw fail('invalid', 'quality must be 1–100');
      if (!(Number.isInteger(maxWidth) && maxWidth >= 16)) throw fail('invalid', 'max_width must be an integer ≥ 16');
      const { tab } = await boundTab(params, { scriptable: false });
      const why = restrictedReason(tab.url ?? '');
      if (why) throw fail('restricted_page', `cannot capture ${tab.url}: ${why}`, { url: tab.url });
      // captureVisibleTab shows the window's active tab: bring ours forward first.
      let activated = false;
      if (!tab.active) {
        await api.tabsUpdate(tab.id, { active: true });
        activated = true;
      }
      let dataUrl;
      try {
        dataUrl = await api.captureVisibleTab(tab.windowId, { format, quality });
      } catch (err) {
        const m = String(err?.message);
        if (/permission|activeTab|all_urls/i.test(m)) throw fail('no_permission', `cannot capture ${tab.url}: ${m}`, { origin: tab.url });
        if (/Cannot access|cannot be scripted|chrome:\/\//i.test(m)) throw fail('restricted_page', `cannot capture ${tab.url}: ${m}`, { url: tab.url });
        throw err;
      }
      const shot = await downscale(dataUrl, { format, quality, maxWidth });
      return { tab_id: tab.id, ...shot, format, activated, ...(activated ? { note: 'the tab was made active in its window to take the screenshot' } : {}) };
    },
  };
}

/** Shrinks a captured image to maxWidth in the worker (OffscreenCanvas). */
async function downscale(dataUrl, { format, quality, maxWidth }) {
  const blob = await (await fetch(dataUrl)).blob();
  const bitmap = await createImageBitmap(blob);
  const { width, height } = bitmap;
  if (width <= maxWidth) {
    bitmap.close();
    return { data_url: dataUrl, width, height, bytes: blob.size };
  }
  const w = maxWidth;
  const h = Math.max(1, Math.round((height * maxWidth) / width));
  const canvas = new OffscreenCanvas(w, h);
  const ctx = canvas.getContext('2d');
  ctx.imageSmoothingQuality = 'high';
  ctx.drawImage(bitmap, 0, 0, w, h);
  bitmap.close();
  const type = format === 'png' ? 'image/png' : 'image/jpeg';
  const out = await canvas.convertToBlob({ type, quality: quality / 100 });
  const bytes = new Uint8Array(await out.arrayBuffer());
  return { data_url: `data:${type};base64,${encodeBase64(bytes)}`, width: w, height: h, bytes: bytes.length };
}
