// browser.page.capture in the page: the rendered DOM as the user sees it, as
// the simplified HTML of protocol/BROWSER.md. A classic script of the content
// script's isolated world, injected after content.js (whose shared parts it
// uses: FerryContentParts) and called through FerryContent.call('capture').
(function ferryCapture(global) {
  'use strict';
  if (global.FerryCapture) return;
  const S = global.FerrySelectors;
  const { styleOf, bySelector, isSecretField, DROP, VOID } = global.FerryContentParts;

  // ---------------------------------------------------------------- what is written

  const KEEP_ATTRS = new Set(['href', 'src', 'alt', 'title', 'type', 'name', 'placeholder', 'role', 'aria-label', 'colspan', 'rowspan', 'for', 'lang', 'datetime', 'open']);
  // Elements that get a selector (the capture's sel attribute): containers and controls, the things
  // worth reading or acting on again. Paragraphs, links and inline markup go
  // without: the container above them is addressable, and the capture of a
  // large page stays near the size of its DOM.
  const SEL = new Set(['main', 'article', 'section', 'nav', 'header', 'footer', 'aside', 'form', 'fieldset', 'details', 'dialog',
    'div', 'table', 'ul', 'ol', 'dl', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote', 'pre', 'figure', 'iframe',
    'button', 'input', 'select', 'textarea', 'label', 'video', 'audio']);
  const PHRASING = new Set(['b', 'i', 'em', 'strong', 'a', 'span', 'code', 'small', 'sup', 'sub', 'abbr', 'cite', 'q', 's', 'u', 'mark', 'time', 'kbd', 'var', 'samp', 'br', 'wbr', 'td', 'th', 'tr', 'li', 'tbody', 'thead', 'p']);
  const PLAIN_ATTRS = new Set(['href', 'title', 'colspan', 'rowspan', 'datetime', 'lang', 'dir']);
  /** No attribute that could make a style rule single it out. */
  function plain(names) {
    if (names === null) return true;
    for (let i = 0; i < names.length; i++) if (!PLAIN_ATTRS.has(names[i])) return false;
    return true;
  }
  const PRE = new Set(['pre', 'textarea', 'listing', 'xmp', 'plaintext']);
  // The fast path (Capture.fast): the elements it reads in one string, and the
  // inline elements it writes from that string: PHRASING but span and p, which
  // can host a shadow root.
  const FAST_ROOT = new Set(['p', 'li', 'td', 'th', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'dt', 'dd', 'caption', 'figcaption', 'a', 'b', 'i', 'em', 'strong', 'code', 'small',
    'ul', 'ol', 'table', 'thead', 'tbody', 'tr']);
  const FAST_TAGS = new Set([...PHRASING].filter((t) => t !== 'span' && t !== 'p'));
  // An attribute as getHTML writes it (name="value"), read from where the last one ended.
  const FAST_ATTR = / ([a-z][a-z-]*)="([^"]*)"/y;
  const ATTR_ENTITY = /&(?:amp|quot|nbsp|lt|gt);/g;
  const ATTR_ENTITIES = { '&amp;': '&', '&quot;': '"', '&nbsp;': '\u00a0', '&lt;': '<', '&gt;': '>' };
  const COLLAPSIBLE = /\s\s|[^\S ]/;

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
  const clip = (v) => escAttr(v.length > 2000 ? v.slice(0, 2000) : v);

  // ---------------------------------------------------------------- visibility

  /**
   * The capture's faster test, for every element of a large DOM: the same
   * rules as content.js's hiddenReason, but the browser's own checkVisibility
   * first and a computed style only when it says no (display: contents has no
   * box of its own and yet shows its children). True: skip the element.
   */
  function skip(el, hasAttrs, visibilityProperty) {
    if (hasAttrs && el.getAttribute('aria-hidden') === 'true') return true;
    if (!el.checkVisibility({ visibilityProperty, contentVisibilityAuto: false })) {
      const cs = styleOf(el);
      return !(cs && cs.display === 'contents');
    }
    if (el.childElementCount === 0 && !VOID.has(el.localName) && el.offsetWidth === 0 && el.offsetHeight === 0 && el.localName !== 'option' && el.localName !== 'optgroup') return true;
    return false;
  }

  // ---------------------------------------------------------------- the walk

  class Capture {
    constructor(doc, { maxChars, maxElements }) {
      this.sels = S.createSelectors(doc, { cssEscape: CSS.escape });
      this.maxChars = maxChars;
      this.maxElements = maxElements;
      // A page that hides its whole body (visibility: hidden, as the anti-flicker
      // snippets of A/B-testing tools do until their script reveals it, which a
      // blocked or broken script never does) is read as its DOM holds it, and the
      // result says so.
      this.hiddenPage = !!doc.body && !doc.body.checkVisibility({ visibilityProperty: true }) && doc.body.checkVisibility({ visibilityProperty: false });
      this.visibility = !this.hiddenPage;
      this.out = [];
      this.size = 0;
      this.elements = 0;
      this.truncated = false;
      this.frames = [];
      // The full selector of the nearest enclosing element that carries one in the
      // capture. A selector that extends it is sent relative to it (BROWSER.md):
      // ">step" for "<enclosing> > step", ">>>rest" for "<enclosing> >>> rest";
      // the host rebuilds the full one. Long paths then cost a few bytes each.
      this.anc = '';
      // Above zero inside an element whose fast path failed: its descendants do not try again.
      this.noFast = 0;
    }

    push(s) {
      this.out.push(s);
      this.size += s.length;
    }

    last() {
      return this.out.length === 0 ? '' : this.out[this.out.length - 1];
    }

    selAttr(sel) {
      const anc = this.anc;
      let v = sel;
      if (anc !== '' && sel.length > anc.length + 3 && sel.startsWith(anc)) {
        if (sel.startsWith(' > ', anc.length)) v = `>${sel.slice(anc.length + 3)}`;
        else if (sel.startsWith(' >>> ', anc.length)) v = `>>>${sel.slice(anc.length + 5)}`;
      }
      return ` sel='${escAttr(v)}'`;
    }

    text(node, pre) {
      let t = node.nodeValue;
      if (!t) return;
      if (!pre) {
        // Collapse white space only where there is some to collapse: a run of
        // two, or a tab or line break (most text nodes of a large page have none).
        if (COLLAPSIBLE.test(t)) t = t.replace(/\s+/g, ' ');
        if (t === ' ' && (this.out.length === 0 || this.last().endsWith(' ') || this.last().endsWith('>'))) return;
      }
      this.push(esc(t));
    }

    children(parent, pre) {
      // An open shadow root renders instead of the light children; slots pull those in.
      const src = (parent.nodeType === 1 && parent.shadowRoot) || parent;
      for (let n = src.firstChild; n !== null && !this.truncated; n = n.nextSibling) this.node(n, pre);
    }

    node(n, pre) {
      if (n.nodeType === 3) this.text(n, pre);
      else if (n.nodeType === 1) this.element(n, pre);
    }

    element(el, pre) {
      const tag = el.localName;
      if (DROP.has(tag)) return;
      if (tag === 'slot') {
        const assigned = el.assignedNodes({ flatten: true });
        if (assigned.length) for (const a of assigned) this.node(a, pre);
        else this.children(el, pre);
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
      if (!(PHRASING.has(tag) && plain(names)) && skip(el, hasAttrs, this.visibility)) return;
      if (++this.elements > this.maxElements || this.size > this.maxChars) {
        this.truncated = true;
        return;
      }
      if (tag === 'iframe' || tag === 'frame') {
        this.frame(el);
        return;
      }
      let own = null;
      let attrs = '';
      if (SEL.has(tag) || tag.includes('-') || (hasAttrs && names.includes('id'))) {
        own = this.sels.selectorFor(el);
        if (own) attrs += this.selAttr(own);
      }
      attrs += this.attributes(el, tag, names);
      const name = tag.includes('-') && !/^[a-z][a-z0-9-]*$/.test(tag) ? 'div' : tag;
      this.push(`<${name}${attrs}>`);
      if (VOID.has(tag)) return;
      if (tag === 'textarea') {
        this.push('</textarea>');
        return;
      }
      const saved = this.anc;
      if (own) this.anc = own;
      const inPre = pre || PRE.has(tag);
      if (this.noFast === 0 && !inPre && FAST_ROOT.has(tag)) {
        if (!this.fast(el)) {
          this.noFast++;
          this.children(el, inPre);
          this.noFast--;
        }
      } else this.children(el, inPre);
      this.anc = saved;
      this.push(`</${name}>`);
    }

    /** The attributes kept of an element, and the state of a form control (never a secret's value). */
    attributes(el, tag, names) {
      let attrs = '';
      if (names !== null) {
        for (let i = 0; i < names.length; i++) {
          const n = names[i];
          if (!KEEP_ATTRS.has(n)) continue;
          const v = el.getAttribute(n);
          if (v !== '' && v !== null) attrs += ` ${n}='${clip(v)}'`;
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
      return attrs;
    }

    /** A frame: a same-origin one inlined in <ferry-frame>, another origin's left empty. */
    frame(el) {
      let inner = null;
      try {
        inner = el.contentDocument;
      } catch {
        inner = null;
      }
      const src = el.getAttribute('src') || (inner && inner.URL) || '';
      const sel = this.sels.selectorFor(el);
      const selA = sel ? this.selAttr(sel) : '';
      if (inner && inner.body) {
        this.frames.push({ src, selector: sel, inlined: true });
        this.push(`<ferry-frame src='${escAttr(src)}'${selA}>`);
        const saved = this.anc;
        if (sel) this.anc = sel;
        this.children(inner.body, false);
        this.anc = saved;
        this.push('</ferry-frame>');
      } else {
        this.frames.push({ src, selector: sel, inlined: false });
        this.push(`<ferry-frame src='${escAttr(src)}' cross-origin${selA}></ferry-frame>`);
      }
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
    fast(el) {
      if (el.shadowRoot || typeof el.getHTML !== 'function') return false;
      const h = el.getHTML();
      const len = h.length;
      if (len === 0) return true;
      if (this.size + len > this.maxChars) return false;
      // Written straight to out, and taken back if the markup is not all plain.
      const mark = this.out.length;
      const markSize = this.size;
      const undo = () => {
        this.out.length = mark;
        this.size = markSize;
        return false;
      };
      let count = 0;
      let i = 0;
      while (i < len) {
        const lt = h.indexOf('<', i);
        const end = lt < 0 ? len : lt;
        if (end > i) {
          const t = fastText(end - i === len ? h : h.slice(i, end), this.last());
          if (t !== '') this.push(t);
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
          this.push(h.slice(lt, k + 1));
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
          attrs += ` ${n}='${clip(v)}'`;
        }
        if (h.charCodeAt(k) !== 62) return undo();
        this.push(`<${tag}${attrs}>`);
        i = k + 1;
      }
      if (this.elements + count > this.maxElements) return undo();
      this.elements += count;
      return true;
    }
  }

  // Text as getHTML writes it (&amp; &lt; &gt; &nbsp;) made what text() writes:
  // no-break spaces back, white space collapsed, a lone space after a tag or a
  // space dropped.
  function fastText(s, last) {
    let t = s.includes('&nbsp;') ? s.replace(/&nbsp;/g, '\u00a0') : s;
    if (COLLAPSIBLE.test(t)) t = t.replace(/\s+/g, ' ');
    if (t === ' ' && (last === '' || last.endsWith(' ') || last.endsWith('>'))) return '';
    return t;
  }

  /** The element a capture starts from: the body, or what selector names. */
  function rootOf(doc, selector) {
    if (selector === undefined || selector === null || selector === '') return doc.body || doc.documentElement;
    return bySelector(selector);
  }

  function capture({ selector, max_chars: maxChars = 16_000_000, max_elements: maxElements = 200_000 } = {}) {
    const started = performance.now();
    const doc = document;
    const root = rootOf(doc, selector);
    const c = new Capture(doc, { maxChars, maxElements });
    if (root === doc.body || root === doc.documentElement) {
      c.push('<body>');
      c.children(root, false);
      c.push('</body>');
    } else {
      c.element(root, false);
    }
    return {
      url: location.href,
      title: document.title,
      html: c.out.join(''),
      used_selector: selector || null,
      frames: c.frames,
      truncated: c.truncated,
      elements: c.elements,
      capture_ms: Math.round(performance.now() - started),
      ...(c.hiddenPage ? { hidden_page: true } : {}),
    };
  }

  Object.defineProperty(global, 'FerryCapture', { value: Object.freeze({ capture }), enumerable: false });
})(globalThis);
