// Which URLs the browser does not let an extension script, as one pure check
// (protocol/BROWSER.md, reason restricted_page). Pure: tests run it in Node.

// Hosts of the Chrome Web Store, where Chrome refuses every extension.
const STORE_HOSTS = [/^chromewebstore\.google\.com$/i];
const STORE_PREFIXES = [{ host: /^chrome\.google\.com$/i, path: /^\/webstore(\/|$)/i }];

const RESTRICTED_SCHEMES = new Set([
  'chrome:', 'chrome-extension:', 'chrome-untrusted:', 'chrome-search:', 'chrome-error:',
  'devtools:', 'view-source:', 'edge:', 'brave:', 'opera:', 'vivaldi:', 'about:', 'extension:',
]);

/**
 * Why `url` cannot be scripted, or null when it can. `fileAccess` tells
 * whether the user allowed file:// access for the extension.
 * about:blank and about:srcdoc are scriptable, other about: pages are not.
 */
export function restrictedReason(url, { fileAccess = false } = {}) {
  if (typeof url !== 'string' || url === '') return null; // unknown: let the browser decide
  let u;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol === 'about:') {
    return u.pathname === 'blank' || u.pathname === 'srcdoc' ? null : 'the browser\'s own pages cannot be scripted by extensions';
  }
  if (RESTRICTED_SCHEMES.has(u.protocol)) {
    return u.protocol === 'chrome-extension:'
      ? 'pages of extensions cannot be scripted by other extensions'
      : 'the browser\'s own pages cannot be scripted by extensions';
  }
  if (u.protocol === 'file:' && !fileAccess) {
    return 'file:// pages need "Allow access to file URLs" turned on for Ferry in chrome://extensions';
  }
  if (u.protocol === 'https:' || u.protocol === 'http:') {
    if (STORE_HOSTS.some((re) => re.test(u.hostname))) return 'the browser does not let extensions script the Chrome Web Store';
    if (STORE_PREFIXES.some(({ host, path }) => host.test(u.hostname) && path.test(u.pathname))) {
      return 'the browser does not let extensions script the Chrome Web Store';
    }
  }
  return null;
}

/** The browser's wording when executeScript is refused, mapped to a reason. */
export function scriptingFailureReason(message) {
  const m = String(message ?? '');
  if (/Missing host permission|must request permission to access|Cannot access contents of the page/i.test(m)) return 'no_permission';
  if (/Cannot access a chrome|cannot be scripted|Cannot access contents of url|chrome-extension:\/\/ URL of different extension|Cannot access .* URL/i.test(m)) return 'restricted_page';
  if (/No tab with id|Invalid tab ID/i.test(m)) return 'no_tab';
  if (/Frame with ID 0 was removed|No frame with id|The tab was closed|Frame .* was removed/i.test(m)) return 'no_tab';
  return null;
}
