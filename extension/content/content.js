// The content script: runs in the isolated world of a page's top frame,
// injected on demand by the service worker (background/browser/page.js) after
// selectors.js. The service worker calls it with
// executeScript({func: (m, p) => globalThis.FerryContent.call(m, p)}) and
// receives {ok, result} or {ok: false, error: {reason, message, …}}.
// Its state (the snapshot refs) lives as long as the document does.
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

  const DROP = new Set(['script', 'style', 'noscript', 'template', 'svg', 'math', 'link', 'meta', 'head', 'title', 'base', 'object', 'embed', 'canvas', 'audio', 'video', 'source', 'track', 'param', 'map', 'area', 'datalist']);
  const VOID = new Set(['br', 'hr', 'img', 'input', 'wbr', 'col']);

  function styleOf(el) {
    const view = el.ownerDocument.defaultView;
    return view ? view.getComputedStyle(el) : null;
  }

  /** Why an element is not seen by the user (a word), or null (content/element-state.js). */
  function hiddenReason(el, cs) {
    return global.FerryElementState.hiddenReason(el, cs);
  }

  /**
   * The capture's faster test, for every element of a large DOM: the same
   * rules, but the browser's own checkVisibility first and a computed style
   * only when it says no (display: contents has no box of its own and yet
   * shows its children). Returns true when the element is to be skipped.
   */
  function skipInCapture(el, hasAttrs) {
    if (hasAttrs && el.getAttribute('aria-hidden') === 'true') return true;
    if (!el.checkVisibility({ visibilityProperty: true, contentVisibilityAuto: false })) {
      const cs = styleOf(el);
      return !(cs && cs.display === 'contents');
    }
    if (el.childElementCount === 0 && !VOID.has(el.localName) && el.offsetWidth === 0 && el.offsetHeight === 0 && el.localName !== 'option' && el.localName !== 'optgroup') return true;
    return false;
  }

  // ---------------------------------------------------------------- capture

  const KEEP_ATTRS = new Set(['href', 'src', 'alt', 'title', 'type', 'name', 'placeholder', 'role', 'aria-label', 'colspan', 'rowspan', 'for', 'lang', 'datetime', 'open']);
  // Elements that get a selector (the capture's sel attribute): containers and controls, the things
  // worth reading or acting on again. Paragraphs, links and inline markup go
  // without: the container above them is addressable, and the capture of a
  // large page stays near the size of its DOM.
  const SEL = new Set(['main', 'article', 'section', 'nav', 'header', 'footer', 'aside', 'form', 'fieldset', 'details', 'dialog',
    'div', 'table', 'ul', 'ol', 'dl', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote', 'pre', 'figure', 'iframe',
    'button', 'input', 'select', 'textarea', 'label', 'video', 'audio']);
  const PHRASING = new Set(['b', 'i', 'em', 'strong', 'a', 'span', 'code', 'small', 'sup', 'sub', 'abbr', 'cite', 'q', 's', 'u', 'mark', 'time', 'kbd', 'var', 'samp', 'br', 'wbr', 'td', 'th', 'tr', 'li', 'tbody', 'thead', 'p']);
  /** No attribute that could make a style rule single it out. */
  function plain(names) {
    if (names === null) return true;
    for (let i = 0; i < names.length; i++) {
      const n = names[i];
      if (n !== 'href' && n !== 'title' && n !== 'colspan' && n !== 'rowspan' && n !== 'datetime' && n !== 'lang' && n !== 'dir') return false;
    }
    return true;
  }
  const PRE = new Set(['pre', 'textarea', 'listing', 'xmp', 'plaintext']);
  const PLAIN_ATTRS = new Set(['href', 'title', 'colspan', 'rowspan', 'datetime', 'lang', 'dir']);
  // The capture's fast path (capture's fast()): the elements it reads in one
  // string, and the inline elements it writes from that string: PHRASING but
  // span and p, which can host a shadow root.
  const FAST_ROOT = new Set(['p', 'li', 'td', 'th', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'dt', 'dd', 'caption', 'figcaption', 'a', 'b', 'i', 'em', 'strong', 'code', 'small',
    'ul', 'ol', 'table', 'thead', 'tbody', 'tr']);
  const FAST_TAGS = new Set([...PHRASING].filter((t) => t !== 'span' && t !== 'p'));
  // An attribute as getHTML writes it (name="value"), read from where the last one ended.
  const FAST_ATTR = / ([a-z][a-z-]*)="([^"]*)"/y;
  const ATTR_ENTITY = /&(?:amp|quot|nbsp|lt|gt);/g;
  const ATTR_ENTITIES = { '&amp;': '&', '&quot;': '"', '&nbsp;': '\u00a0', '&lt;': '<', '&gt;': '>' };

  const NEEDS_ESC = /[&<>]/;
  function esc(s) {
    // Most text has nothing to escape: test before building a new string.
    if (!NEEDS_ESC.test(s)) return s;
    return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  }
  // Attribute values are single-quoted: JSON then has no quote to escape, and
  // the host reads the capture's string without unescaping it.
  const NEEDS_ESC_ATTR = /[&']/;
  function escAttr(s) {
    s = String(s);
    if (!NEEDS_ESC_ATTR.test(s)) return s;
    return s.replace(/[&']/g, (c) => (c === '&' ? '&amp;' : '&#39;'));
  }

  function capture({ selector, max_chars: maxChars = 16_000_000, max_elements: maxElements = 200_000 } = {}) {
    const started = performance.now();
    const doc = document;
    const sels = S.createSelectors(doc, { cssEscape: CSS.escape });
    let root = doc.body || doc.documentElement;
    if (selector !== undefined && selector !== null && selector !== '') {
      let found;
      try {
        found = S.resolve(doc, selector);
      } catch (err) {
        throw fail('invalid', `the selector ${JSON.stringify(selector)} does not parse: ${err.message}`);
      }
      if (!found) throw fail('no_element', `nothing on the page matches the selector ${JSON.stringify(selector)}`, { selector });
      root = found;
    }
    const out = [];
    let size = 0;
    let elements = 0;
    let truncated = false;
    const frames = [];
    // The full selector of the nearest enclosing element that carries one in the
    // capture. A selector that extends it is sent relative to it (BROWSER.md):
    // ">step" for "<enclosing> > step", ">>>rest" for "<enclosing> >>> rest";
    // the host rebuilds the full one. Long paths then cost a few bytes each.
    let anc = '';
    function selAttr(sel) {
      let v = sel;
      if (anc !== '' && sel.length > anc.length + 3 && sel.startsWith(anc)) {
        if (sel.startsWith(' > ', anc.length)) v = `>${sel.slice(anc.length + 3)}`;
        else if (sel.startsWith(' >>> ', anc.length)) v = `>>>${sel.slice(anc.length + 5)}`;
      }
      return ` sel='${escAttr(v)}'`;
    }

    function push(s) {
      out.push(s);
      size += s.length;
    }

    const COLLAPSIBLE = /\s\s|[^\S ]/;
    function text(node, pre) {
      let t = node.nodeValue;
      if (!t) return;
      if (!pre) {
        // Collapse white space only where there is some to collapse: a run of
        // two, or a tab or line break (most text nodes of a large page have none).
        if (COLLAPSIBLE.test(t)) t = t.replace(/\s+/g, ' ');
        if (t === ' ' && (out.length === 0 || out[out.length - 1].endsWith(' ') || out[out.length - 1].endsWith('>'))) return;
      }
      push(esc(t));
    }

    function children(parent, pre) {
      // An open shadow root renders instead of the light children; slots pull those in.
      const src = (parent.nodeType === 1 && parent.shadowRoot) || parent;
      for (let n = src.firstChild; n !== null && !truncated; n = n.nextSibling) node(n, pre);
    }

    function node(n, pre) {
      if (n.nodeType === 3) text(n, pre);
      else if (n.nodeType === 1) element(n, pre);
    }

    function element(el, pre) {
      const tag = el.localName;
      if (DROP.has(tag)) return;
      if (tag === 'slot') {
        const assigned = el.assignedNodes({ flatten: true });
        if (assigned.length) for (const a of assigned) node(a, pre);
        else children(el, pre);
        return;
      }
      // Inline markup without attributes of its own is as visible as its
      // parent (rules that hide it would need a class, an id or a style):
      // skipping the check for it saves a third of the time on large pages.
      // Each call into the DOM costs (more so from an isolated world, whose
      // wrappers are looked up in a map): hasAttributes is asked once.
      // Attribute names come as one array of strings: no Attr node per attribute.
      const hasAttrs = el.hasAttributes();
      const names = hasAttrs ? el.getAttributeNames() : null;
      if (!(PHRASING.has(tag) && plain(names)) && skipInCapture(el, hasAttrs)) return;
      if (++elements > maxElements || size > maxChars) {
        truncated = true;
        return;
      }
      let attrs = '';
      let own = null;
      if (SEL.has(tag) || tag.includes('-') || (hasAttrs && names.includes('id'))) {
        own = sels.selectorFor(el);
        if (own) attrs += selAttr(own);
      }
      if (hasAttrs) {
        for (let i = 0; i < names.length; i++) {
          const n = names[i];
          if (!KEEP_ATTRS.has(n)) continue;
          const v = el.getAttribute(n);
          if (v !== '' && v !== null) attrs += ` ${n}='${escAttr(v.length > 2000 ? v.slice(0, 2000) : v)}'`;
        }
      }
      if (tag === 'input' || tag === 'textarea' || tag === 'select') {
        if (tag === 'input' && (el.type === 'checkbox' || el.type === 'radio')) {
          if (el.checked) attrs += ' checked';
        } else if (tag !== 'select' && el.value && !isSecretField(el)) {
          attrs += ` value='${escAttr(el.value.slice(0, 10_000))}'`;
        }
        if (el.disabled) attrs += ' disabled';
      } else if (tag === 'option' && el.selected) attrs += ' selected';
      const name = tag.includes('-') && !/^[a-z][a-z0-9-]*$/.test(tag) ? 'div' : tag;
      if (tag === 'iframe' || tag === 'frame') {
        let inner = null;
        try {
          inner = el.contentDocument;
        } catch {
          inner = null;
        }
        const src = el.getAttribute('src') || (inner && inner.URL) || '';
        const sel = sels.selectorFor(el);
        if (inner && inner.body) {
          frames.push({ src, selector: sel, inlined: true });
          push(`<ferry-frame src='${escAttr(src)}'${sel ? selAttr(sel) : ''}>`);
          const saved = anc;
          if (sel) anc = sel;
          children(inner.body, false);
          anc = saved;
          push('</ferry-frame>');
        } else {
          frames.push({ src, selector: sel, inlined: false });
          push(`<ferry-frame src='${escAttr(src)}' cross-origin${sel ? selAttr(sel) : ''}></ferry-frame>`);
        }
        return;
      }
      push(`<${name}${attrs}>`);
      if (VOID.has(tag)) return;
      if (tag === 'textarea') {
        push('</textarea>');
        return;
      }
      const saved = anc;
      if (own) anc = own;
      const inPre = pre || PRE.has(tag);
      if (noFast === 0 && !inPre && FAST_ROOT.has(tag)) {
        if (!fast(el)) {
          noFast++;
          children(el, inPre);
          noFast--;
        }
      } else children(el, inPre);
      anc = saved;
      push(`</${name}>`);
    }

    // The fast path for a block of text with plain inline markup (a paragraph,
    // a list, a table of plain rows and cells): its contents are read as one string (the
    // browser's serialization, getHTML) instead of node by node. Each node the walk touches gets a
    // wrapper object in the content script's world (then garbage), which is
    // most of a capture's time on a large page; the string costs none. It is
    // taken only when the markup inside is made of elements that the walk
    // would write as they are, unchecked for visibility (PHRASING, plain(),
    // no selector) and that cannot host a shadow root; otherwise the walk
    // goes node by node and its descendants do not try again (noFast).
    let noFast = 0;
    function fast(el) {
      if (el.shadowRoot || typeof el.getHTML !== 'function') return false;
      const h = el.getHTML();
      const len = h.length;
      if (len === 0) return true;
      if (size + len > maxChars) return false;
      // Written straight to out, and taken back if the markup is not all plain.
      const mark = out.length;
      const markSize = size;
      const undo = () => {
        out.length = mark;
        size = markSize;
        return false;
      };
      let count = 0;
      let i = 0;
      while (i < len) {
        const lt = h.indexOf('<', i);
        const end = lt < 0 ? len : lt;
        if (end > i) {
          const t = fastText(end - i === len ? h : h.slice(i, end), out.length === 0 ? '' : out[out.length - 1]);
          if (t !== '') push(t);
        }
        if (lt < 0) break;
        let j = lt + 1;
        const close = h.charCodeAt(j) === 47; // "/"
        if (close) j++;
        let k = j;
        for (let c = h.charCodeAt(k); (c >= 97 && c <= 122) || (c >= 48 && c <= 57); c = h.charCodeAt(++k));
        const tag = h.slice(j, k);
        if (!FAST_TAGS.has(tag)) return undo();
        if (h.charCodeAt(k) === 62) { // ">": no attributes
          if (!close) count++;
          push(h.slice(lt, k + 1));
          i = k + 1;
          continue;
        }
        if (close) return undo();
        count++;
        let attrs = '';
        FAST_ATTR.lastIndex = k;
        let m;
        while ((m = FAST_ATTR.exec(h)) !== null) {
          const n = m[1];
          if (!PLAIN_ATTRS.has(n)) return undo();
          k = FAST_ATTR.lastIndex;
          if (!KEEP_ATTRS.has(n) || m[2] === '') continue;
          const v = m[2].includes('&') ? m[2].replace(ATTR_ENTITY, (e) => ATTR_ENTITIES[e]) : m[2];
          attrs += ` ${n}='${escAttr(v.length > 2000 ? v.slice(0, 2000) : v)}'`;
        }
        if (h.charCodeAt(k) !== 62) return undo();
        push(`<${tag}${attrs}>`);
        i = k + 1;
      }
      if (elements + count > maxElements) return undo();
      elements += count;
      return true;
    }

    // Text as getHTML writes it (&amp; &lt; &gt; &nbsp;) made what text()
    // writes: no-break spaces back, white space collapsed, a lone space after a
    // tag or a space dropped.
    function fastText(s, last) {
      let t = s.includes('&nbsp;') ? s.replace(/&nbsp;/g, '\u00a0') : s;
      if (COLLAPSIBLE.test(t)) t = t.replace(/\s+/g, ' ');
      if (t === ' ' && (last === '' || last.endsWith(' ') || last.endsWith('>'))) return '';
      return t;
    }

    if (root === doc.body || root === doc.documentElement) {
      push('<body>');
      children(root, false);
      push('</body>');
    } else {
      element(root, false);
    }
    const html = out.join('');
    return {
      url: location.href,
      title: document.title,
      html,
      used_selector: selector || null,
      frames,
      truncated,
      elements,
      capture_ms: Math.round(performance.now() - started),
    };
  }

  // ---------------------------------------------------------------- snapshot and refs

  const INTERACTIVE_ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'switch', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'option', 'textbox', 'searchbox', 'combobox', 'listbox', 'slider', 'spinbutton', 'treeitem']);
  const LANDMARK_ROLES = new Set(['navigation', 'main', 'banner', 'contentinfo', 'complementary', 'form', 'dialog', 'region', 'search', 'heading', 'alertdialog', 'tablist', 'menu', 'menubar', 'toolbar', 'table', 'grid', 'tree']);

  function labelText(el) {
    try {
      if (el.labels && el.labels.length) {
        const label = el.labels[0];
        // A field inside its label is no part of the name: a <select>'s option
        // texts or a <textarea>'s text would otherwise be glued onto it.
        if (!label.querySelector('select, textarea')) return label.textContent;
        const copy = label.cloneNode(true);
        for (const field of copy.querySelectorAll('select, textarea')) field.remove();
        return copy.textContent;
      }
    } catch {
      // not labelable
    }
    return '';
  }

  function infoOf(el) {
    const lb = el.getAttribute('aria-labelledby');
    let labelledBy = '';
    if (lb) {
      const root = el.getRootNode();
      labelledBy = lb.split(/\s+/).map((id) => root.getElementById ? root.getElementById(id) : el.ownerDocument.getElementById(id))
        .filter(Boolean).map((x) => x.textContent).join(' ');
    }
    const tag = el.localName;
    const isField = tag === 'input' || tag === 'textarea' || tag === 'select';
    return {
      tag,
      role: el.getAttribute('role') || '',
      href: tag === 'a' && el.hasAttribute('href'),
      type: tag === 'input' ? (el.getAttribute('type') || 'text').toLowerCase() : '',
      multiple: tag === 'select' && (el.multiple || el.size > 1),
      contentEditable: el.isContentEditable && (!el.parentElement || !el.parentElement.isContentEditable),
      ariaLabel: el.getAttribute('aria-label') || '',
      labelledBy,
      label: isField ? labelText(el) : '',
      alt: tag === 'img' ? el.getAttribute('alt') || '' : '',
      placeholder: el.getAttribute('placeholder') || '',
      title: el.getAttribute('title') || '',
      buttonValue: tag === 'input' && /^(button|submit|reset)$/i.test(el.type) ? el.value : '',
      text: isField || el.isContentEditable ? '' : (el.textContent || '').slice(0, 400),
    };
  }

  const refs = new Map(); // ref → {weak: WeakRef<Element>, fp}
  const refOf = new WeakMap(); // element → ref: an element keeps its ref across snapshots
  let nextRef = 1;
  let snapshots = 0;

  function isInteractive(el, role) {
    if (INTERACTIVE_ROLES.has(role)) return true;
    const tag = el.localName;
    if (tag === 'details' || tag === 'summary') return true;
    const ti = el.getAttribute('tabindex');
    return ti !== null && Number(ti) >= 0 && role === 'generic' && el.hasAttribute('onclick');
  }

  function snapshot({ max_depth: maxDepth = 25, max_nodes: maxNodes = 600 } = {}) {
    const lines = [];
    let truncated = false;
    snapshots++;
    function walk(parent, depth) {
      const src = parent.shadowRoot ? parent.shadowRoot.children : parent.children;
      for (let i = 0; i < src.length; i++) {
        if (truncated) return;
        visit(src[i], depth);
      }
    }
    function visit(el, depth) {
      const tag = el.localName;
      if (DROP.has(tag)) return;
      if (tag === 'slot') {
        const assigned = el.assignedElements({ flatten: true });
        for (const a of assigned.length ? assigned : el.children) visit(a, depth);
        return;
      }
      if (hiddenReason(el, styleOf(el))) return;
      const info = infoOf(el);
      const role = S.roleOf(info);
      const interactive = isInteractive(el, role);
      const landmark = !interactive && LANDMARK_ROLES.has(role);
      let childDepth = depth;
      if (interactive || landmark) {
        if (lines.length >= maxNodes) {
          truncated = true;
          return;
        }
        const fp = S.fingerprint(info);
        let ref = refOf.get(el);
        if (!ref) {
          ref = `e${nextRef++}`;
          refOf.set(el, ref);
        }
        refs.set(ref, { weak: new WeakRef(el), fp });
        let line = `${'  '.repeat(Math.min(depth, maxDepth))}- ${role}`;
        if (fp.name) line += ` ${JSON.stringify(fp.name)}`;
        if (role === 'heading') line += ` [level=${tag.slice(1) || el.getAttribute('aria-level') || ''}]`;
        if ((tag === 'input' || tag === 'textarea') && !/^(checkbox|radio|button|submit|reset)$/.test(el.type) && el.value && el.type !== 'password') {
          line += ` value=${JSON.stringify(S.clean(el.value, 80))}`;
        }
        if (tag === 'select') line += ` value=${JSON.stringify([...el.selectedOptions].map((o) => S.clean(o.label, 40)).join(', '))}`;
        if (el.checked === true) line += ' [checked]';
        if (el.disabled === true || el.getAttribute('aria-disabled') === 'true') line += ' [disabled]';
        if (tag === 'a' && el.getAttribute('href')) line += ` href=${JSON.stringify(S.clean(el.getAttribute('href'), 100))}`;
        line += ` [ref=${ref}]`;
        lines.push(line);
        childDepth = depth + 1;
        if (interactive && tag !== 'details' && tag !== 'form') return; // no interactive elements inside interactive ones
      }
      if (tag === 'iframe' || tag === 'frame') {
        let inner = null;
        try {
          inner = el.contentDocument;
        } catch {
          inner = null;
        }
        if (inner && inner.body) walk(inner.body, childDepth);
        return;
      }
      walk(el, childDepth);
    }
    walk(document.body || document.documentElement, 0);
    return { snapshot_id: `s${snapshots}`, url: location.href, title: document.title, tree: lines.join('\n'), truncated };
  }

  function describe(el) {
    const fp = S.fingerprint(infoOf(el));
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
    if (hasSel) {
      let el;
      try {
        el = S.resolve(document, selector);
      } catch (err) {
        throw fail('invalid', `the selector ${JSON.stringify(selector)} does not parse: ${err.message}`);
      }
      if (!el) throw fail('no_element', `nothing on the page matches the selector ${JSON.stringify(selector)}`, { selector });
      return el;
    }
    if (typeof ref !== 'string' || !/^e\d+$/.test(ref)) throw fail('invalid', `ref ${JSON.stringify(ref)} is not a snapshot ref (e1, e2, …)`);
    const entry = refs.get(ref);
    if (!entry) {
      throw fail('stale_ref', `ref ${ref} is not from a snapshot of this page as it is now (it navigated or reloaded since): take a new snapshot`, { ref });
    }
    const el = entry.weak.deref();
    if (!el || !el.isConnected) {
      refs.delete(ref);
      throw fail('stale_ref', `the element of ref ${ref} is no longer in the page (it changed since the snapshot): take a new snapshot`, { ref });
    }
    const why = S.fingerprintMismatch(entry.fp, S.fingerprint(infoOf(el)));
    if (why) throw fail('stale_ref', `ref ${ref} no longer matches the snapshot (${why}): take a new snapshot`, { ref });
    return el;
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
      if (go && form && typeof form.requestSubmit === 'function') form.requestSubmit();
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

  const METHODS = { capture, snapshot, click, type, select, scroll, info, network };

  async function call(method, params) {
    const fn = Object.hasOwn(METHODS, method) ? METHODS[method] : null;
    if (!fn) return { ok: false, error: { reason: 'invalid', message: `unknown content method ${method}` } };
    try {
      return { ok: true, result: await fn(params || {}) };
    } catch (err) {
      if (err instanceof Failure) return { ok: false, error: { reason: err.reason, message: err.message, ...err.extra } };
      return { ok: false, error: { reason: 'script_error', message: String((err && err.message) || err), stack: String((err && err.stack) || '') } };
    }
  }

  global.FerryContent = Object.freeze({ call });
})(globalThis);
