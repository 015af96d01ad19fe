// browser.tabs.list filters as one pure predicate (patterns are JavaScript
// regexes matched case-insensitively).

import { fail } from './errors.js';

function compile(name, pattern) {
  if (pattern === undefined || pattern === null || pattern === '') return null;
  if (typeof pattern !== 'string') throw fail('invalid', `${name} must be a string`);
  try {
    return new RegExp(pattern, 'i');
  } catch (err) {
    throw fail('invalid', `${name} is not a valid regular expression: ${err.message}`);
  }
}

/** Returns tab → boolean for the params of browser.tabs.list; throws invalid on a bad regex. */
export function tabFilter({ url_pattern, title_pattern, active, window_id, audible } = {}) {
  const url = compile('url_pattern', url_pattern);
  const title = compile('title_pattern', title_pattern);
  return (tab) =>
    (!url || url.test(tab.url ?? tab.pendingUrl ?? '')) &&
    (!title || title.test(tab.title ?? '')) &&
    (typeof active !== 'boolean' || !!tab.active === active) &&
    (window_id === undefined || window_id === null || tab.windowId === window_id) &&
    (typeof audible !== 'boolean' || !!tab.audible === audible);
}

/** The wire shape of one tab. */
export function describeTab(tab) {
  return {
    tab_id: tab.id,
    window_id: tab.windowId,
    url: tab.url ?? tab.pendingUrl ?? '',
    title: tab.title ?? '',
    active: !!tab.active,
    audible: !!tab.audible,
    status: tab.status ?? 'unknown',
  };
}
