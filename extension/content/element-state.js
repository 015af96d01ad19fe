// Whether a person could use an element now: the one rule set that both the page
// bridge (content/bridge.js: the targets of declared actions) and the browser tools
// (content/content.js: browser_click, browser_type, browser_select) decide by, so
// that an action and a click agree on what is disabled, hidden, covered or out of
// reach. A classic script of the extension's isolated world (declared in the
// manifest before the bridge, injected before content.js): it defines
// globalThis.FerryElementState there, which pages never see.
(function ferryElementState(global) {
  'use strict';
  if (global.FerryElementState) return;

  function describe(el) {
    let s = el.localName || el.tagName.toLowerCase();
    if (el.id) s += `#${el.id}`;
    const text = (el.getAttribute('aria-label') || el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 40);
    return text ? `${s} "${text}"` : s;
  }

  function styleOf(el) {
    const view = el.ownerDocument.defaultView;
    return view ? view.getComputedStyle(el) : null;
  }

  /** Why an element is not seen by the user (a word), or null. Its subtree goes with it. */
  function hiddenReason(el, cs) {
    if (el.getAttribute('aria-hidden') === 'true') return 'aria-hidden';
    if (el.inert || el.hasAttribute('inert')) return 'inert';
    if (!cs) return null;
    if (cs.display === 'none') return 'display:none';
    if (cs.display === 'contents') return null;
    if (cs.visibility === 'hidden' || cs.visibility === 'collapse') return 'visibility:hidden';
    if (cs.contentVisibility === 'hidden') return 'content-visibility:hidden';
    if (el.localName === 'input' && el.type === 'hidden') return 'hidden input';
    const w = el.offsetWidth;
    if (w === 0 && el.offsetHeight === 0 && (el.childElementCount === 0 || cs.overflow === 'hidden') && el.localName !== 'option' && el.localName !== 'optgroup') {
      return 'zero size';
    }
    return null;
  }

  function composedContains(outer, inner) {
    for (let n = inner; n; n = n.parentNode || n.host) if (n === outer) return true;
    return false;
  }

  function disabledProblem(el) {
    let disabled = false;
    try {
      disabled = el.matches(':disabled');
    } catch {
      disabled = false;
    }
    if (disabled || el.getAttribute('aria-disabled') === 'true') {
      return { state: 'disabled', reason: `${describe(el)} is disabled`, element: describe(el) };
    }
    return null;
  }

  function hiddenProblem(el) {
    for (let e = el; e && e.nodeType === 1; e = e.parentElement || (e.getRootNode().host ?? null)) {
      const why = hiddenReason(e, styleOf(e));
      if (why && !(why === 'zero size' && e !== el)) {
        return { state: 'hidden', reason: `${describe(el)} is hidden (${e === el ? why : `inside ${describe(e)}, ${why}`})`, element: describe(el) };
      }
    }
    if (!el.getClientRects().length) return { state: 'hidden', reason: `${describe(el)} is hidden (it has no box on the page)`, element: describe(el) };
    return null;
  }

  /**
   * Whether a click at the element's centre reaches it: {point} or {problem}. With
   * scroll, the element is scrolled into view first (what a person would do);
   * without, an element outside the viewport is left as it is and not judged.
   */
  function reach(el, { scroll = true } = {}) {
    const doc = el.ownerDocument;
    const view = doc.defaultView;
    const outside = (r) => r.bottom <= 0 || r.right <= 0 || r.top >= view.innerHeight || r.left >= view.innerWidth;
    let r = el.getBoundingClientRect();
    if (scroll) {
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      r = el.getBoundingClientRect();
    } else if (outside(r)) {
      return { point: null };
    }
    const x = r.left + r.width / 2;
    const y = r.top + r.height / 2;
    if (doc !== document) return { point: { x, y } }; // inside a frame: the frame's own coordinates
    if (x < 0 || y < 0 || x > view.innerWidth || y > view.innerHeight) {
      return { problem: { state: 'offscreen', reason: `${describe(el)} is outside the viewport (the visible area) even after scrolling it into view`, element: describe(el) } };
    }
    const root = el.getRootNode();
    let hit = (root.elementFromPoint ? root.elementFromPoint(x, y) : null) || document.elementFromPoint(x, y);
    while (hit?.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    if (hit && hit !== el && !composedContains(el, hit)) {
      const label = hit.closest && hit.closest('label');
      const labelsEl = label && (label.control === el || composedContains(label, el));
      if (!labelsEl && !composedContains(hit, el)) {
        return { problem: { state: 'covered', reason: `${describe(el)} is covered by ${describe(hit)}`, element: describe(el), covered_by: describe(hit) } };
      }
    }
    return { point: { x, y } };
  }

  /** null when a person could use the element now, else {state, reason, element, covered_by?}. */
  function problem(el, { scroll = false } = {}) {
    if (!el || !el.isConnected) return { state: 'missing', reason: 'the element is no longer in the page', element: '' };
    return hiddenProblem(el) ?? disabledProblem(el) ?? reach(el, { scroll }).problem ?? null;
  }

  Object.defineProperty(global, 'FerryElementState', {
    value: Object.freeze({ describe, hiddenReason, disabledProblem, hiddenProblem, reach, problem }),
    enumerable: false,
  });
})(globalThis);
