// Declared in the manifest for the MAIN world at document_start: the only
// script that runs in every page, so it stays tiny. It keeps the page's last
// 30 console messages and uncaught errors in a closure; browser.page.console
// reads them through the one non-enumerable reader it defines.
(() => {
  const KEY = Symbol.for('ferry.console');
  if (Object.prototype.hasOwnProperty.call(window, KEY)) return;
  const buf = [];
  const keep = (level, parts) => {
    let text = '';
    for (const p of parts) {
      let s;
      if (typeof p === 'string') s = p;
      else if (p instanceof Error) s = `${p.name}: ${p.message}`;
      else {
        try {
          s = JSON.stringify(p);
        } catch {
          s = String(p);
        }
        if (s === undefined) s = String(p);
      }
      text += (text ? ' ' : '') + s;
      if (text.length > 2000) break;
    }
    buf.push({ level, text: text.slice(0, 2000), time: new Date().toISOString() });
    if (buf.length > 30) buf.shift();
  };
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
    const orig = console[level];
    if (typeof orig !== 'function') continue;
    console[level] = function (...args) {
      try {
        keep(level, args);
      } catch {
        // never break the page's logging
      }
      return orig.apply(this, args);
    };
  }
  addEventListener('error', (e) => keep('error', [`Uncaught ${e.error instanceof Error ? `${e.error.name}: ${e.error.message}` : e.message}`]));
  addEventListener('unhandledrejection', (e) => keep('error', ['Uncaught (in promise)', e.reason]));
  Object.defineProperty(window, KEY, { value: () => buf.slice(), enumerable: false });
})();
