// The content script: runs in the isolated world of a page's top frame,
// injected on demand by the service worker (background/browser/page.js) after
// selectors.js, before capture.js and snapshot.js, which it shares its parts
// with (FerryContentParts). The service worker calls it with
// executeScript({func: (m, p) => globalThis.FerryContent.call(m, p)}) and
// receives {ok, result, dialogs?} or {ok: false, error: {reason, message, …}}.
// Here: the dispatcher, what an element's visibility is, the element a call is
// about, and the actions (click, type, select, scroll) with info and network.
(function (global) {
  'use strict';
  if (global.FerryContent) return;
  const S = global.FerrySelectors;

  class Failure extends Error {
    constructor(reason, message, extra) {
      super(message);
      this.reason = reason;
      this.extra = extra || {};
    }
  }
  const fail = (reason, message, extra) => new Failure(reason, message, extra);

  // ---------------------------------------------------------------- visibility

  // MathML is text (MathJax renders formulas with it for screen readers): kept.
  const DROP = new Set(['script', 'style', 'noscript', 'template', 'svg', 'link', 'meta', 'head', 'title', 'base', 'object', 'embed', 'canvas', 'audio', 'video', 'source', 'track', 'param', 'map', 'area', 'datalist']);
  const VOID = new Set(['br', 'hr', 'img', 'input', 'wbr', 'col']);

  function styleOf(el) {
    const view = el.ownerDocument.defaultView;
    return view ? view.getComputedStyle(el) : null;
  }

  /** Why an element is not seen by the user (a word), or null (content/element-state.js). */
  function hiddenReason(el, cs) {
    return global.FerryElementState.hiddenReason(el, cs);
  }

  /** The element a CSS selector (with >>> steps) names; never a guess. */
  function bySelector(selector) {
    let el;
    try {
      el = S.resolve(document, selector);
    } catch (err) {
      throw fail('invalid', `the selector ${JSON.stringify(selector)} does not parse: ${err.message}`);
    }
    if (!el) throw fail('no_element', `nothing on the page matches the selector ${JSON.stringify(selector)}`, { selector });
    return el;
  }

  Object.defineProperty(global, 'FerryContentParts', { value: Object.freeze({ fail, styleOf, hiddenReason, bySelector, isSecretField, DROP, VOID }), enumerable: false });

  // ---------------------------------------------------------------- the element a call is about

  function describe(el) {
    const fp = S.fingerprint(global.FerrySnapshot.infoOf(el));
    let s = `${fp.role === 'generic' ? `<${fp.tag}>` : fp.role}`;
    if (fp.name) s += ` "${fp.name}"`;
    if (el.id) s += ` #${el.id}`;
    return s;
  }

  /** The element a call is about, from {ref} or {selector}; never a guess. */
  function target({ ref, selector } = {}, { optional = false } = {}) {
    const hasRef = ref !== undefined && ref !== null && ref !== '';
    const hasSel = selector !== undefined && selector !== null && selector !== '';
    if (hasRef && hasSel) throw fail('invalid', 'give either ref or selector, not both');
    if (!hasRef && !hasSel) {
      if (optional) return null;
      throw fail('invalid', 'give a ref from the latest snapshot or a CSS selector');
    }
    if (hasSel) return bySelector(selector);
    return global.FerrySnapshot.element(ref);
  }

  // Whether a person could use the element: content/element-state.js decides, for
  // these tools and for the targets of pages' declared actions alike.
  const elementState = global.FerryElementState;
  function stateFail(p) {
    const { reason, ...data } = p;
    return fail('element_state', reason, data);
  }

  function checkDisabled(el) {
    const p = elementState.disabledProblem(el);
    if (p) throw stateFail(p);
  }

  function checkVisible(el) {
    const p = elementState.hiddenProblem(el);
    if (p) throw stateFail(p);
  }

  /** Scrolls el into view and checks that a click at its centre reaches it; returns the point. */
  function reach(el) {
    const r = elementState.reach(el, { scroll: true });
    if (r.problem) throw stateFail(r.problem);
    return r.point;
  }

  function mouse(el, type, x, y) {
    const view = el.ownerDocument.defaultView;
    const Ctor = type.startsWith('pointer') && view.PointerEvent ? view.PointerEvent : view.MouseEvent;
    el.dispatchEvent(new Ctor(type, { bubbles: true, cancelable: true, composed: true, view, clientX: x, clientY: y, button: 0, buttons: type.endsWith('down') ? 1 : 0, pointerType: 'mouse', isPrimary: true }));
  }

  function click(params) {
    const el = target(params);
    checkVisible(el);
    checkDisabled(el);
    const { x, y } = reach(el);
    const element = describe(el);
    mouse(el, 'pointerdown', x, y);
    mouse(el, 'mousedown', x, y);
    if (typeof el.focus === 'function') el.focus({ preventScroll: true });
    mouse(el, 'pointerup', x, y);
    mouse(el, 'mouseup', x, y);
    if (typeof el.click === 'function') el.click();
    else mouse(el, 'click', x, y);
    return { clicked: true, element };
  }

  const TEXT_INPUTS = /^(text|search|email|tel|url|password|number|date|datetime-local|month|time|week|color|range)$/;

  function nativeValueSetter(el) {
    const view = el.ownerDocument.defaultView;
    const proto = el.localName === 'textarea' ? view.HTMLTextAreaElement.prototype : view.HTMLInputElement.prototype;
    return Object.getOwnPropertyDescriptor(proto, 'value').set;
  }

  function fire(el, type, init) {
    const view = el.ownerDocument.defaultView;
    const Ctor = type === 'input' || type === 'beforeinput' ? view.InputEvent : type.startsWith('key') ? view.KeyboardEvent : view.Event;
    return el.dispatchEvent(new Ctor(type, { bubbles: true, composed: true, cancelable: type !== 'input' && type !== 'change', ...init }));
  }

  function type(params) {
    const { text = '', clear = true, submit = false } = params;
    if (typeof text !== 'string') throw fail('invalid', 'text must be a string');
    const el = target(params);
    checkVisible(el);
    checkDisabled(el);
    const tag = el.localName;
    const isField = (tag === 'input' && TEXT_INPUTS.test((el.type || 'text').toLowerCase())) || tag === 'textarea';
    if (!isField && !el.isContentEditable) {
      throw fail('element_state', `${describe(el)} does not take text (not an input, textarea or contenteditable)`, { state: 'not_editable', element: describe(el) });
    }
    if (isField && el.readOnly) throw fail('element_state', `${describe(el)} is read-only`, { state: 'readonly', element: describe(el) });
    reach(el);
    el.focus({ preventScroll: true });
    let value;
    if (isField) {
      const next = clear ? text : el.value + text;
      // The prototype's setter, not el.value: frameworks such as React track
      // the value through the property and only see a change made beneath it.
      nativeValueSetter(el).call(el, next);
      fire(el, 'input', { inputType: 'insertText', data: text });
      fire(el, 'change', {});
      value = el.value;
    } else {
      const doc = el.ownerDocument;
      const sel = doc.getSelection();
      const range = doc.createRange();
      range.selectNodeContents(el);
      if (!clear) range.collapse(false);
      sel.removeAllRanges();
      sel.addRange(range);
      let done = false;
      try {
        done = doc.execCommand('insertText', false, text);
      } catch {
        done = false;
      }
      if (!done) {
        range.deleteContents();
        range.insertNode(doc.createTextNode(text));
        fire(el, 'input', { inputType: 'insertText', data: text });
      }
      value = el.textContent;
    }
    if (submit) {
      const form = el.form || (el.closest && el.closest('form'));
      const enter = { key: 'Enter', code: 'Enter', keyCode: 13, which: 13 };
      const go = fire(el, 'keydown', enter);
      fire(el, 'keypress', enter);
      fire(el, 'keyup', enter);
      // Enter submits through the form's default button, whose formaction applies, as
      // the host judged it (form below).
      if (go && form && typeof form.requestSubmit === 'function') {
        const button = defaultButton(form);
        form.requestSubmit(button && !button.disabled ? button : undefined);
      }
    }
    const sensitive = isSecretField(el);
    // `sensitive` tells the host to keep the typed text out of its audit log and log
    // file; the value comes back masked for the same fields.
    return { typed: true, element: describe(el), value: sensitive ? '•'.repeat(value.length) : value, sensitive };
  }

  // A field holds a secret when it is a password field, asks for a password or a
  // one-time code through autocomplete, or its name, id or label says secret, token,
  // password or key.
  const SECRET_AUTOCOMPLETE = /\b(current-password|new-password|one-time-code|cc-number|cc-csc)\b/i;
  const SECRET_NAME = /secret|token|passw(or)?d|passphrase|api[-_ ]?key|private[-_ ]?key|(^|[^a-z])(key|otp|pin|cvc|cvv)([^a-z]|$)/i;
  function isSecretField(el) {
    if (el.localName === 'input' && (el.type || '').toLowerCase() === 'password') return true;
    if (SECRET_AUTOCOMPLETE.test(el.getAttribute('autocomplete') || '')) return true;
    const names = [el.getAttribute('name'), el.id, el.getAttribute('aria-label'), el.getAttribute('placeholder')];
    return names.some((n) => n && SECRET_NAME.test(n));
  }

  function select(params) {
    const { values } = params;
    if (!Array.isArray(values) || values.some((v) => typeof v !== 'string')) throw fail('invalid', 'values must be a list of strings');
    const el = target(params);
    if (el.localName !== 'select') {
      throw fail('element_state', `${describe(el)} is not a <select>; click its options instead`, { state: 'not_a_select', element: describe(el) });
    }
    checkVisible(el);
    checkDisabled(el);
    if (!el.multiple && values.length > 1) throw fail('invalid', `${describe(el)} takes one value, ${values.length} given`);
    const options = [...el.options];
    const chosen = values.map((v) => {
      const o = options.find((opt) => opt.value === v) || options.find((opt) => S.clean(opt.label, 1000) === S.clean(v, 1000));
      if (!o) {
        throw fail('invalid', `${describe(el)} has no option ${JSON.stringify(v)}; its options: ${options.slice(0, 30).map((opt) => JSON.stringify(opt.value)).join(', ')}`);
      }
      if (o.disabled) throw fail('element_state', `option ${JSON.stringify(v)} of ${describe(el)} is disabled`, { state: 'disabled', element: describe(el) });
      return o;
    });
    reach(el);
    el.focus({ preventScroll: true });
    for (const o of options) o.selected = chosen.includes(o);
    fire(el, 'input', {});
    fire(el, 'change', {});
    return { selected: [...el.selectedOptions].map((o) => o.value) };
  }

  function scroll(params) {
    const el = target(params, { optional: true });
    if (el) {
      el.scrollIntoView({ block: 'center', inline: 'nearest', behavior: 'instant' });
    } else {
      const { pixels = 500, direction = 'down' } = params;
      if (typeof pixels !== 'number' || !Number.isFinite(pixels)) throw fail('invalid', 'pixels must be a number');
      const d = { down: [0, 1], up: [0, -1], right: [1, 0], left: [-1, 0] }[direction];
      if (!d) throw fail('invalid', `direction must be down, up, left or right, not ${JSON.stringify(direction)}`);
      window.scrollBy({ left: d[0] * pixels, top: d[1] * pixels, behavior: 'instant' });
    }
    return { x: Math.round(window.scrollX), y: Math.round(window.scrollY) };
  }

  // The form's default button: its first submit control in tree order.
  function defaultButton(f) {
    for (const c of f.elements) {
      const k = (c.getAttribute('type') || '').toLowerCase();
      if ((c.localName === 'button' && (k === '' || k === 'submit')) || (c.localName === 'input' && (k === 'submit' || k === 'image'))) return c;
    }
    return null;
  }

  // Where the form an element belongs to would send itself: a submit control's
  // formaction, else the form's action, resolved as the browser would. The host
  // holds a typed or clicked value to that destination, not to the page's origin.
  function form(params) {
    const el = target(params);
    const f = el.form || (el.closest && el.closest('form'));
    if (!f) return { form: false };
    const tag = el.localName;
    const kind = (el.getAttribute('type') || '').toLowerCase();
    const submitter = (tag === 'button' && (kind === '' || kind === 'submit')) || (tag === 'input' && (kind === 'submit' || kind === 'image'));
    // A field submits through the form's default button (Enter does), a button itself.
    const via = submitter ? el : defaultButton(f);
    const raw = (via && via.getAttribute('formaction')) || f.getAttribute('action') || '';
    let action = '';
    try {
      action = new URL(raw, document.baseURI).href;
    } catch {
      action = raw;
    }
    return { form: true, action, submitter };
  }

  function info() {
    return {
      url: location.href,
      title: document.title,
      viewport: { width: window.innerWidth, height: window.innerHeight },
      scroll: { x: Math.round(window.scrollX), y: Math.round(window.scrollY) },
      ready_state: document.readyState,
    };
  }

  function network() {
    const origin = performance.timeOrigin;
    const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
    entries.sort((a, b) => a.startTime - b.startTime);
    return {
      requests: entries.slice(-30).map((e) => ({
        url: e.name,
        // The timeline does not record methods: navigations and subresources
        // are GETs; a page's own fetch/XHR may have used another.
        method: e.initiatorType === 'fetch' || e.initiatorType === 'xmlhttprequest' ? null : 'GET',
        type: e.entryType === 'navigation' ? 'document' : e.initiatorType,
        status: e.responseStatus || null,
        duration_ms: Math.round(e.duration),
        time: new Date(origin + e.startTime).toISOString(),
      })),
    };
  }

  // ---------------------------------------------------------------- dispatcher

  const METHODS = {
    capture: (p) => global.FerryCapture.capture(p),
    snapshot: (p) => global.FerrySnapshot.snapshot(p),
    click, type, select, scroll, info, network, form,
  };
  // The methods that act on the page as a person would: from then on Ferry
  // drives the document, and its dialogs are answered, not left to block it
  // (content/dialogs.js).
  const DRIVES = new Set(['click', 'type', 'select', 'scroll']);

  /** The dialogs the page opened (and Ferry answered) since t, as a result reports them. */
  function dialogsSince(t) {
    const log = global.FerryDialogs;
    if (!log) return [];
    return log.since(t).map(({ event, at, result, ...d }) => (event === 'closed' ? { ...d, by: 'person' } : d));
  }

  async function call(method, params) {
    const fn = Object.hasOwn(METHODS, method) ? METHODS[method] : null;
    if (!fn) return { ok: false, error: { reason: 'invalid', message: `unknown content method ${method}` } };
    const started = Date.now();
    if (DRIVES.has(method)) document.dispatchEvent(new CustomEvent('ferry:drive'));
    try {
      const out = { ok: true, result: await fn(params || {}) };
      const met = dialogsSince(started);
      if (met.length) out.dialogs = met;
      return out;
    } catch (err) {
      if (err instanceof Failure) return { ok: false, error: { reason: err.reason, message: err.message, ...err.extra } };
      return { ok: false, error: { reason: 'script_error', message: String((err && err.message) || err), stack: String((err && err.stack) || '') } };
    }
  }

  global.FerryContent = Object.freeze({ call });
})(globalThis);
