// Declared in the manifest for the isolated world at document_start, in http(s)
// frames: carries what content/dialogs.js (MAIN world) says about the page's
// dialogs to the service worker, which fails tool calls on a tab whose page waits
// behind an open dialog at once instead of letting them hang. It keeps the last
// dialogs in the isolated world too, where content.js reports the ones a call met.
(function ferryDialogRelay(global) {
  'use strict';
  if (global.FerryDialogs) return;
  const log = [];
  document.addEventListener('ferry:dialog', (e) => {
    let d;
    try {
      d = JSON.parse(String(e.detail));
    } catch {
      return;
    }
    if (!d || typeof d.type !== 'string' || typeof d.event !== 'string') return;
    const entry = { event: d.event, type: d.type, message: String(d.message ?? '').slice(0, 2000), at: Date.now() };
    for (const k of ['default', 'answer', 'text', 'by', 'result']) if (d[k] !== undefined && d[k] !== null) entry[k] = d[k];
    log.push(entry);
    if (log.length > 20) log.shift();
    try {
      chrome.runtime.sendMessage({ type: 'page.dialog', dialog: entry }).catch(() => {});
    } catch {
      // the extension was reloaded: nobody to tell
    }
  });
  Object.defineProperty(global, 'FerryDialogs', {
    value: Object.freeze({ since: (t) => log.filter((d) => d.at >= t && d.event !== 'open') }),
    enumerable: false,
  });
})(globalThis);
