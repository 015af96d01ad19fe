// browser.tabs.*: list, open (with an optional wait for the load), close, activate.

import { checkDocument, documentParam } from './document.js';
import { fail } from './errors.js';
import { describeTab, tabFilter } from './tab-filter.js';

export const MAX_WAIT_MS = 30_000;

/** Chrome's "No tab with id" as no_tab; anything else passes through. */
export function tabError(err, tabId) {
  if (/No tab with id|Invalid tab ID/i.test(String(err?.message))) return fail('no_tab', `no tab with id ${tabId} (closed?)`, { tab_id: tabId });
  return err;
}

function tabIdParam(params, { required = true } = {}) {
  const id = params?.tab_id;
  if (id === undefined || id === null) {
    if (required) throw fail('invalid', 'tab_id is required');
    return undefined;
  }
  if (!Number.isInteger(id) || id < 0) throw fail('invalid', `tab_id must be a tab's number, not ${JSON.stringify(id)}`);
  return id;
}

export async function getTab(api, tabId) {
  try {
    return await api.tabsGet(tabId);
  } catch (err) {
    throw tabError(err, tabId);
  }
}

/** The tab a call is about: tab_id, else the active tab of the focused (or any) window. */
export async function resolveTab(api, params) {
  const id = tabIdParam(params, { required: false });
  if (id !== undefined) return getTab(api, id);
  let [tab] = await api.tabsQuery({ active: true, lastFocusedWindow: true });
  if (!tab) [tab] = await api.tabsQuery({ active: true });
  if (!tab) throw fail('no_tab', 'there is no active tab; give a tab_id');
  return tab;
}

/**
 * Resolves when the tab has finished loading the navigation that was just
 * started, or after timeoutMs ({timedOut: true}). A tab still showing the
 * previous page counts as loading until Chrome reports the new one; with
 * requireLoading (a reload, a history step, a navigation of an existing tab:
 * start the wait before the navigation) only a "loading" seen first counts.
 */
export function waitForLoad(api, tabId, { timeoutMs = MAX_WAIT_MS, timers = globalThis, previousUrl, requireLoading = false } = {}) {
  return new Promise((resolve, reject) => {
    let seenLoading = false;
    let finished = false;
    const stop = [];
    const finish = (fn, v) => {
      if (finished) return;
      finished = true;
      for (const s of stop) s();
      fn(v);
    };
    const timer = timers.setTimeout(() => finish(resolve, { timedOut: true }), timeoutMs);
    stop.push(() => timers.clearTimeout(timer));
    const consider = (tab) => {
      if (tab.status === 'loading') seenLoading = true;
      else if (tab.status === 'complete' && (seenLoading || (!requireLoading && (previousUrl === undefined || tab.url !== previousUrl)))) {
        finish(resolve, { timedOut: false, tab });
      }
    };
    stop.push(api.onTabUpdated((id, change, tab) => {
      if (id === tabId) consider({ ...tab, status: change.status ?? tab.status });
    }));
    stop.push(api.onTabRemoved((id) => {
      if (id === tabId) finish(reject, fail('no_tab', `tab ${tabId} was closed while loading`, { tab_id: tabId }));
    }));
    const poll = () => api.tabsGet(tabId).then(consider, (err) => finish(reject, tabError(err, tabId)));
    poll();
    // Events are the fast path; a slow poll covers an update Chrome coalesced away.
    const interval = timers.setInterval(poll, 250);
    stop.push(() => timers.clearInterval(interval));
  });
}

export function createTabMethods(api, { timers = globalThis, dialogs, leaving } = {}) {
  return {
    async 'browser.tabs.list'(params = {}) {
      const keep = tabFilter(params);
      const query = {};
      if (Number.isInteger(params.window_id)) query.windowId = params.window_id;
      const tabs = await api.tabsQuery(query);
      return { tabs: tabs.filter(keep).map(describeTab) };
    },

    async 'browser.tabs.open'(params = {}) {
      const { url, active = true, window_id: windowId, wait_until_loaded: wait = true, stay_on_host: stay = false } = params;
      if (typeof url !== 'string' || url === '') throw fail('invalid', 'url is required');
      let timeoutMs = params.timeout_ms ?? MAX_WAIT_MS;
      if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) throw fail('invalid', 'timeout_ms must be a positive number');
      timeoutMs = Math.min(timeoutMs, MAX_WAIT_MS);
      const tabId = tabIdParam(params, { required: false });
      const started = Date.now();
      let tab;
      let previousUrl;
      let waiting = null;
      if (tabId !== undefined) await leaving?.check(await getTab(api, tabId));
      // The document it loads is driven from its first script: a dialog while loading is answered and reported.
      const undrive = leaving ? await leaving.drive(url) : () => {};
      let unpin = async () => {};
      try {
        if (tabId !== undefined) {
          const current = await getTab(api, tabId);
          await checkDocument(api, current, documentParam(params));
          previousUrl = current.url;
          if (stay) unpin = await pinHost(api, tabId, url);
          waiting = wait ? waitForLoad(api, tabId, { timeoutMs, timers, requireLoading: true }) : null;
          tab = await api.tabsUpdate(tabId, { url, active: !!active });
          if (active && tab.windowId !== undefined) await api.windowsUpdate(tab.windowId, { focused: true }).catch(() => {});
        } else if (stay && api.sessionRulesUpdate) {
          // The tab must exist before a rule can name it: open it blank, pin it, then load.
          const props = { url: 'about:blank', active: !!active };
          if (Number.isInteger(windowId)) props.windowId = windowId;
          tab = await api.tabsCreate(props);
          // The blank page's own load must be over, or the wait below would end with it.
          await waitForLoad(api, tab.id, { timeoutMs: 5_000, timers }).catch(() => {});
          unpin = await pinHost(api, tab.id, url);
          waiting = wait ? waitForLoad(api, tab.id, { timeoutMs, timers, requireLoading: true }) : null;
          tab = await api.tabsUpdate(tab.id, { url });
        } else {
          const props = { url, active: !!active };
          if (Number.isInteger(windowId)) props.windowId = windowId;
          tab = await api.tabsCreate(props);
        }
      } catch (err) {
        await unpin();
        undrive();
        if (/Invalid url|Cannot navigate to|Illegal URL/i.test(String(err?.message))) throw fail('invalid', `cannot open ${url}: ${err.message}`);
        throw tabError(err, tabId);
      }
      let timedOut = false;
      let dialog = null;
      if (wait) {
        const load = waiting ?? waitForLoad(api, tab.id, { timeoutMs, timers });
        const watch = dialogs?.watch(tab.id);
        try {
          const r = await (watch ? Promise.race([load, watch.promise.catch(() => ({ timedOut: false, dialog: dialogs.open(tab.id) }))]) : load);
          timedOut = r.timedOut;
          dialog = r.dialog ?? null;
        } finally {
          watch?.stop();
        }
      }
      await unpin();
      undrive();
      const now = await getTab(api, tab.id);
      const waited = wait ? Date.now() - started : 0;
      // Only a web address the tab reached on another host is a redirect stopped there (a
      // tab still on its blank page has not been anywhere).
      const reached = now.url || now.pendingUrl || '';
      const stopped = stay && /^https?:/i.test(reached) && hostOf(reached) !== hostOf(url) ? { stopped_redirect: reached } : {};
      const met = leaving && !dialog ? await leaving.met(now, started) : [];
      return {
        tab_id: now.id,
        window_id: now.windowId,
        url: now.url || now.pendingUrl || url,
        title: now.title ?? '',
        status: now.status ?? 'unknown',
        loaded: now.status === 'complete',
        waited_ms: waited,
        timed_out: timedOut,
        ...(timedOut ? { note: `the page was still loading after ${timeoutMs} ms; it may finish later` } : {}),
        ...(met.length ? { dialogs: met } : {}),
        ...(dialog ? { dialog, note: 'the page stopped loading behind a dialog of its own, which waits for a person' } : {}),
        ...stopped,
      };
    },

    async 'browser.tabs.close'(params = {}) {
      const tabId = tabIdParam(params);
      const current = await getTab(api, tabId);
      await checkDocument(api, current, documentParam(params));
      await leaving?.check(current);
      try {
        await api.tabsRemove(tabId);
      } catch (err) {
        throw tabError(err, tabId);
      }
      return { closed: true };
    },

    async 'browser.tabs.activate'(params = {}) {
      const tabId = tabIdParam(params);
      await checkDocument(api, await getTab(api, tabId), documentParam(params));
      let tab;
      try {
        tab = await api.tabsUpdate(tabId, { active: true });
      } catch (err) {
        throw tabError(err, tabId);
      }
      await api.windowsUpdate(tab.windowId, { focused: true }).catch(() => {});
      return { tab_id: tab.id, window_id: tab.windowId };
    },
  };
}

export function hostOf(u) {
  try {
    return new URL(u).hostname;
  } catch {
    return '';
  }
}

/**
 * Keeps a tab's loads on url's host while a call opens it: a redirect to another host
 * is blocked before its request leaves (declarativeNetRequest), so that the host can
 * judge that hop as a destination of its own (stopped_redirect). The rule's id is the
 * tab's, so a rule a suspended service worker left behind is replaced, never doubled.
 * Returns the undo.
 */
export async function pinHost(api, tabId, url) {
  const host = hostOf(url);
  if (!api.sessionRulesUpdate || !host) return async () => {};
  await api.sessionRulesUpdate({
    removeRuleIds: [tabId],
    addRules: [{ id: tabId, priority: 1, action: { type: 'block' }, condition: { tabIds: [tabId], resourceTypes: ['main_frame'], excludedRequestDomains: [host] } }],
  });
  return () => api.sessionRulesUpdate({ removeRuleIds: [tabId] }).catch(() => {});
}
