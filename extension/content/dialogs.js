// Declared in the manifest for the MAIN world at document_start, in http(s)
// frames: JavaScript dialogs (alert, confirm, prompt, and the question
// beforeunload asks when a page is left).
//
// A page the person is using keeps its dialogs as they are: the browser's own
// window opens, the page waits for the person's answer and gets it. The only
// difference is that Ferry is told first (type and message, through
// content/dialog-relay.js), so a tool call meeting the open dialog says so at
// once instead of waiting on a page that cannot answer.
//
// A document Ferry is driving (a browser tool acted on it since the person last
// pressed a key or a button in it) gets no dialog window: the answer
// browser_dialog prepared, else the safe one (alert: OK; confirm and prompt:
// cancel), is given at once and reported. An extension cannot press a dialog's
// buttons once the browser shows it (only the debugger API can, attached before
// the dialog opens, with a banner across the browser for as long as it stays
// attached), and a page blocked behind a window nobody looks at is what an agent
// must never leave behind.
(() => {
  const KEY = Symbol.for('ferry.dialogs');
  if (Object.prototype.hasOwnProperty.call(window, KEY)) return;
  const native = { alert: window.alert, confirm: window.confirm, prompt: window.prompt };
  const MAX = 2000;
  // Set when content/drive.js ran first (a navigation by a browser tool).
  let driven = Object.prototype.hasOwnProperty.call(window, Symbol.for('ferry.drive'));
  let armed = null; // {action: 'accept'|'dismiss', text?} for the next dialog
  let leaveQuietly = false;

  const text = (v) => (v === undefined ? '' : String(v)).slice(0, MAX);
  const tell = (detail) => {
    try {
      document.dispatchEvent(new CustomEvent('ferry:dialog', { detail: JSON.stringify(detail) }));
    } catch {
      // a page that broke dispatchEvent loses the notice, not its dialog
    }
  };

  function answer(type, args) {
    const message = text(args[0]);
    const def = type === 'prompt' ? text(args[1]) : undefined;
    if (!driven) {
      tell({ event: 'open', type, message, default: def });
      let result;
      try {
        result = native[type].apply(window, args);
      } finally {
        tell({ event: 'closed', type, message, result: result === undefined ? null : result });
      }
      return result;
    }
    const a = armed;
    armed = null;
    const accept = type === 'alert' || (a !== null && a.action === 'accept');
    let result;
    if (type === 'confirm') result = accept;
    else if (type === 'prompt') result = accept ? (a.text ?? def ?? '') : null;
    tell({ event: 'answered', type, message, default: def, answer: accept ? 'accept' : 'dismiss', text: type === 'prompt' && accept ? result : undefined, by: a ? 'browser_dialog' : 'default' });
    return result;
  }

  for (const type of ['alert', 'confirm', 'prompt']) {
    if (typeof native[type] !== 'function') continue;
    // Named like the originals, so the page's own checks of them still read well.
    const f = { [type](...args) { return answer(type, args); } }[type];
    Object.defineProperty(window, type, { value: f, writable: true, configurable: true, enumerable: true });
  }

  // The question beforeunload asks is the page's only way to keep unsaved work:
  // Ferry asks the page before it leaves it (leaving()), and when browser_dialog
  // said to leave anyway, this first listener keeps the page's own ones from
  // asking again.
  addEventListener('beforeunload', (e) => {
    if (leaveQuietly) e.stopImmediatePropagation();
  }, true);

  // Whether leaving would make the browser ask (the page's handlers want to keep
  // the person, who has used the page: the browser asks no one else).
  function leaving() {
    if (leaveQuietly) return { asks: false };
    if (navigator.userActivation && !navigator.userActivation.hasBeenActive) return { asks: false };
    const e = document.createEvent('BeforeUnloadEvent');
    e.initEvent('beforeunload', false, true);
    window.dispatchEvent(e);
    const asks = e.defaultPrevented || (typeof e.returnValue === 'string' && e.returnValue !== '');
    if (!asks) return { asks: false };
    if (armed && armed.action === 'accept') {
      armed = null;
      leaveQuietly = true;
      tell({ event: 'answered', type: 'beforeunload', message: '', answer: 'accept', by: 'browser_dialog' });
      return { asks: false };
    }
    const by = armed ? 'browser_dialog' : 'default';
    armed = null;
    tell({ event: 'answered', type: 'beforeunload', message: '', answer: 'dismiss', by });
    return { asks: true, by };
  }

  // The person takes over: a key or a press of their own (trusted) hands the
  // dialogs back to them.
  const personal = (e) => {
    if (e.isTrusted) {
      driven = false;
      armed = null;
    }
  };
  addEventListener('pointerdown', personal, true);
  addEventListener('keydown', personal, true);

  Object.defineProperty(window, KEY, {
    value: Object.freeze({
      drive() {
        driven = true;
      },
      arm(action, promptText) {
        driven = true;
        armed = { action: action === 'accept' ? 'accept' : 'dismiss', text: typeof promptText === 'string' ? promptText.slice(0, MAX) : undefined };
      },
      leaving,
      state: () => ({ driven, armed }),
    }),
    enumerable: false,
  });
  document.addEventListener('ferry:drive', () => {
    driven = true;
  });
})();
