// Page-side localisation: every visible string comes from _locales through
// chrome.i18n. HTML marks text with data-i18n="key" (textContent) and
// data-i18n-title="key" (the title attribute).

import { getMessage } from './chrome-api.js';

/** The message, or the key itself so a missing translation is visible, not blank. */
export function t(key, substitutions) {
  return getMessage(key, substitutions) || key;
}

export function localize(root = document) {
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll('[data-i18n-title]')) el.title = t(el.dataset.i18nTitle);
  // The translation's own language, not the browser's: CJK glyph choice depends on it.
  if (root.documentElement) root.documentElement.lang = t('htmlLang');
}
