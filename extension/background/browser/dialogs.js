// What the service worker knows of each tab's JavaScript dialogs, from
// content/dialog-relay.js: the dialog open now (the page waits behind it for a
// person) and the last ones answered. Tool calls on a tab with an open dialog
// fail at once with its type and message instead of waiting on a page that cannot
// answer.

import { fail } from './errors.js';

const KEEP = 10;

export function createDialogs(api) {
  const tabs = new Map(); // tab id → {open, recent, waiters}

  function entry(tabId) {
    let e = tabs.get(tabId);
    if (!e) {
      e = { open: null, recent: [], waiters: new Set() };
      tabs.set(tabId, e);
    }
    return e;
  }

  /** A notice from a page's relay (a content script of that tab). */
  function notice(dialog, sender) {
    const tabId = sender?.tab?.id;
    if (!Number.isInteger(tabId) || !dialog || typeof dialog.type !== 'string') return false;
    const e = entry(tabId);
    const d = { type: dialog.type, message: String(dialog.message ?? ''), frame_url: sender.url ?? '' };
    if (dialog.default !== undefined) d.default = dialog.default;
    if (dialog.event === 'open') {
      e.open = { ...d, opened_at: new Date().toISOString() };
      for (const w of e.waiters) w(e.open);
      return true;
    }
    if (dialog.event === 'closed') {
      e.open = null;
      remember(e, { ...d, answer: dialog.result === false || dialog.result === null ? 'dismiss' : 'accept', by: 'person' });
    } else if (dialog.event === 'answered') {
      remember(e, { ...d, answer: dialog.answer, ...(dialog.text !== undefined ? { text: dialog.text } : {}), by: dialog.by });
    }
    return true;
  }

  function remember(e, d) {
    e.recent.push({ ...d, at: Date.now() });
    if (e.recent.length > KEEP) e.recent.shift();
  }

  /** The dialog the tab's page waits behind now, or null. */
  const open = (tabId) => tabs.get(tabId)?.open ?? null;

  /** Dialogs answered in the tab since time t (ms), oldest first, without their time. */
  const since = (tabId, t) => (tabs.get(tabId)?.recent ?? []).filter((d) => d.at >= t).map(({ at, ...d }) => d);

  /** A promise rejected with dialog_open when a dialog opens in the tab; stop() ends the watch. */
  function watch(tabId) {
    const e = entry(tabId);
    let stop;
    const promise = new Promise((_, reject) => {
      const w = (d) => reject(openFailure(tabId, d));
      e.waiters.add(w);
      stop = () => e.waiters.delete(w);
    });
    promise.catch(() => {});
    return { promise, stop };
  }

  /** Throws dialog_open when the tab's page waits behind a dialog. */
  function check(tabId) {
    const d = open(tabId);
    if (d) throw openFailure(tabId, d);
  }

  // A navigation or a closed tab ends whatever dialog there was.
  api.onTabRemoved((tabId) => tabs.delete(tabId));
  api.onTabUpdated((tabId, change) => {
    if (change.status === 'loading' && change.url !== undefined) {
      const e = tabs.get(tabId);
      if (e) e.open = null;
    }
  });

  return { notice, open, since, watch, check };
}

export function openFailure(tabId, d) {
  const what = d.type === 'beforeunload' ? 'asks whether to leave it' : `shows ${d.type === 'alert' ? 'an' : 'a'} ${d.type} dialog`;
  return fail('dialog_open',
    `the page in tab ${tabId} ${what}${d.message ? ` (${JSON.stringify(d.message)})` : ''} and waits for a person to answer it in the browser: it is a page the person is using, whose dialogs are theirs (Ferry answers the dialogs of pages it drives, see browser_dialog)`,
    { tab_id: tabId, dialog: { type: d.type, message: d.message, ...(d.default !== undefined ? { default: d.default } : {}) } });
}

// Runs in the page's MAIN world: would leaving it make the browser ask?
function askLeaving() {
  const d = window[Symbol.for('ferry.dialogs')];
  return d ? d.leaving() : { asks: false };
}

// Runs in the page's MAIN world: the answer for the page's next dialog.
function armDialog(action, text) {
  const d = window[Symbol.for('ferry.dialogs')];
  if (!d) return false;
  d.arm(action, text);
  return true;
}

// Runs in the relay's isolated world: the dialogs its page answered since t.
function relayLog(t) {
  const log = globalThis.FerryDialogs;
  return log ? log.since(t).map(({ event, at, result, ...d }) => (event === 'closed' ? { ...d, by: 'person' } : d)) : null;
}

const DRIVE_PREFIX = 'ferry-drive-';
let driveSeq = 0;

/**
 * The page-side half of dialogs for the browser tools: before a tool leaves a
 * page (navigates or closes its tab), whether the page asks to keep the person;
 * while it navigates, that the new document is driven from its first script.
 */
export function createLeaving(api, dialogs, { timers = globalThis } = {}) {
  // A worker that stopped mid-navigation left its registration behind: the
  // browser keeps dynamic content scripts across worker restarts.
  Promise.resolve()
    .then(() => api.getRegisteredContentScripts())
    .then((scripts) => {
      const ids = scripts.map((s) => s.id).filter((id) => id.startsWith(DRIVE_PREFIX));
      if (ids.length) return api.unregisterContentScripts({ ids });
      return undefined;
    })
    .catch(() => {});

  async function inPage(tab, func, args = [], world = 'MAIN') {
    const url = tab.url ?? '';
    if (!/^https?:/.test(url)) return undefined;
    const run = api.executeScript({ target: { tabId: tab.id, frameIds: [0] }, world, func, args }).then((r) => r?.[0]?.result, () => undefined);
    // A page that does not answer within a second is no page a person is editing.
    return Promise.race([run, new Promise((resolve) => timers.setTimeout(resolve, 1000))]);
  }

  return {
    /** Throws beforeunload when the page would ask before being left (the tool does nothing). */
    async check(tab) {
      dialogs.check(tab.id);
      if (tab.status !== 'complete') return;
      const r = await inPage(tab, askLeaving);
      if (r?.asks) {
        throw fail('beforeunload',
          `the page in tab ${tab.id} asks to confirm leaving it (its beforeunload handler: it may hold unsaved changes), so it was not left; to leave anyway and lose them, call browser_dialog {"action": "accept"} and repeat`,
          { tab_id: tab.id, dialog: { type: 'beforeunload', message: '' } });
      }
    },

    /**
     * The dialogs a navigation met since started (ms): from the page's own
     * relay, which has them all (its messages to the worker may still be on
     * their way when the load completes), else from what reached the worker.
     */
    async met(tab, started) {
      const r = await inPage(tab, relayLog, [started], 'ISOLATED');
      return Array.isArray(r) ? r : dialogs.since(tab.id, started);
    },

    /** Arms the next dialog of the tab's page; false when the page has no dialog hook (not http(s)). */
    async arm(tab, action, text) {
      dialogs.check(tab.id);
      return (await inPage(tab, armDialog, [action, text ?? null])) === true;
    },

    /**
     * Marks the documents a navigation to url loads as driven from document_start,
     * until done() is called (the load finished or timed out).
     */
    async drive(url) {
      let pattern;
      try {
        const u = new URL(url);
        if (u.protocol !== 'http:' && u.protocol !== 'https:') return () => {};
        pattern = `${u.protocol}//${u.hostname}${u.pathname}*`;
      } catch {
        return () => {};
      }
      const id = `${DRIVE_PREFIX}${Date.now().toString(36)}-${++driveSeq}`;
      try {
        await api.registerContentScripts([{ id, matches: [pattern], js: ['content/drive.js'], runAt: 'document_start', world: 'MAIN', allFrames: false, persistAcrossSessions: false }]);
      } catch {
        return () => {};
      }
      let done = false;
      const stop = () => {
        if (done) return;
        done = true;
        api.unregisterContentScripts({ ids: [id] }).catch(() => {});
      };
      timers.setTimeout(stop, 35_000);
      return stop;
    },
  };
}
