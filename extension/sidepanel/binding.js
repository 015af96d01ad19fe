// The tab this panel acts for: the active tab of its window, shown in the
// header with its origin and how many actions its page declared.

import { tabsGet, tabsQuery } from '../lib/chrome-api.js';
import { byId as $ } from '../lib/dom.js';
import { hostRequest } from '../lib/host-request.js';
import { t } from '../lib/i18n.js';
import { app } from './app.js';
import { tabOrigin } from './view-model.js';

export async function refreshBoundTab(tabId) {
  try {
    const tab = tabId !== undefined ? await tabsGet(tabId) : (await tabsQuery({ active: true, currentWindow: true }))[0];
    app.boundTab = tab ? { id: tab.id, windowId: tab.windowId, title: tab.title ?? '', url: tab.url ?? '' } : null;
  } catch {
    app.boundTab = null;
  }
  renderBinding();
  refreshPageActions();
}

export function renderBinding() {
  const { boundTab, view } = app;
  const conv = view.conversation;
  // A conversation stays bound to the tab it was started in until a new message rebinds it.
  const origin = boundTab ? tabOrigin(boundTab.url) : conv?.origin ?? '';
  $('bound-tab-title').textContent = boundTab?.title || (boundTab ? t('untitledTab') : t('noTab'));
  $('bound-origin').textContent = origin || t('noOrigin');
  $('bound-tab-title').title = boundTab?.url ?? '';
}

let generation = 0;
export async function refreshPageActions() {
  const mine = ++generation;
  if (!app.hostConnected || !app.boundTab) {
    $('page-actions').textContent = '';
    return;
  }
  try {
    const got = await hostRequest('tools.list', { tab_id: app.boundTab.id });
    if (mine !== generation) return;
    const page = (got.tools ?? []).filter((x) => x.source === 'page');
    const held = (got.unavailable ?? []).length;
    $('page-actions').textContent = page.length > 0 ? t('pageActionsCount', [String(page.length)]) : t('pageActionsNone');
    $('page-actions').title = [...page.map((x) => x.name), ...(held ? [t('unavailableCount', [String(held)])] : [])].join('\n');
  } catch {
    if (mine === generation) $('page-actions').textContent = '';
  }
}
