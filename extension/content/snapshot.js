// browser.page.snapshot in the page, and the refs it hands out: a compact tree
// of the page's interactive elements and landmarks, read a page (offset) or a
// region (selector) at a time. A classic script of the content script's
// isolated world, injected after content.js (FerryContentParts); content.js
// resolves refs through it. Its refs live as long as the document does.
(function ferrySnapshot(global) {
  'use strict';
  if (global.FerrySnapshot) return;
  const S = global.FerrySelectors;
  const { fail, styleOf, hiddenReason, DROP, bySelector } = global.FerryContentParts;

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

  /** What selectors.js fingerprints and names an element by. */
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
  // A snapshot's id changes when what it shows does: the same page read twice is
  // the same snapshot (which is what the loop guard compares).
  let snapshots = 0;
  let lastShown = null;
  const COUNT_MS = 2000;

  function isInteractive(el, role) {
    if (INTERACTIVE_ROLES.has(role)) return true;
    const tag = el.localName;
    if (tag === 'details' || tag === 'summary') return true;
    const ti = el.getAttribute('tabindex');
    return ti !== null && Number(ti) >= 0 && role === 'generic' && el.hasAttribute('onclick');
  }

  /** One line of the tree for an element, giving it its ref. */
  function line(el, tag, info, role, depth, maxDepth) {
    const fp = S.fingerprint(info);
    let ref = refOf.get(el);
    if (!ref) {
      ref = `e${nextRef++}`;
      refOf.set(el, ref);
    }
    refs.set(ref, { weak: new WeakRef(el), fp });
    let s = `${'  '.repeat(Math.min(depth, maxDepth))}- ${role}`;
    if (fp.name) s += ` ${JSON.stringify(fp.name)}`;
    if (role === 'heading') s += ` [level=${tag.slice(1) || el.getAttribute('aria-level') || ''}]`;
    if ((tag === 'input' || tag === 'textarea') && !/^(checkbox|radio|button|submit|reset)$/.test(el.type) && el.value && el.type !== 'password') {
      s += ` value=${JSON.stringify(S.clean(el.value, 80))}`;
    }
    if (tag === 'select') s += ` value=${JSON.stringify([...el.selectedOptions].map((o) => S.clean(o.label, 40)).join(', '))}`;
    if (el.checked === true) s += ' [checked]';
    if (el.disabled === true || el.getAttribute('aria-disabled') === 'true') s += ' [disabled]';
    if (tag === 'a' && el.getAttribute('href')) s += ` href=${JSON.stringify(S.clean(el.getAttribute('href'), 100))}`;
    return `${s} [ref=${ref}]`;
  }

  /**
   * The tree of elements offset … offset+max_nodes-1 (in document order) of the
   * page or of the region selector names; the walk goes on past them to count
   * the rest, so that the result says how many are left and where to go on.
   */
  function snapshot({ max_depth: maxDepth = 25, max_nodes: maxNodes = 600, offset = 0, selector } = {}) {
    if (!Number.isInteger(offset) || offset < 0) throw fail('invalid', 'offset must be a whole number ≥ 0');
    const root = selector ? bySelector(selector) : document.body || document.documentElement;
    const lines = [];
    let count = 0;
    // Counting what comes after the page shown stops on a very large DOM.
    const deadline = performance.now() + COUNT_MS;
    let counted = true;
    function walk(parent, depth) {
      const src = parent.shadowRoot ? parent.shadowRoot.children : parent.children;
      for (let i = 0; i < src.length; i++) {
        if (lines.length >= maxNodes && performance.now() > deadline) {
          counted = false;
          return;
        }
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
        if (count >= offset && lines.length < maxNodes) lines.push(line(el, tag, info, role, depth, maxDepth));
        count++;
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
    if (selector) visit(root, 0);
    else walk(root, 0);
    const tree = lines.join('\n');
    const end = Math.min(count, offset + lines.length);
    const shown = `${selector ?? ''}\n${offset}\n${tree}`;
    if (shown !== lastShown) {
      snapshots++;
      lastShown = shown;
    }
    const more = end < count || !counted;
    const out = { snapshot_id: `s${snapshots}`, url: location.href, title: document.title, tree, truncated: more };
    if (counted) out.total = count;
    if (offset > 0 || more) out.shown = { from: Math.min(offset, count), to: end };
    if (more) {
      out.next_offset = end;
      const left = counted ? `${count - end} more elements` : `more elements (over ${count - end}; the count stopped after ${COUNT_MS / 1000} s)`;
      out.note = `${left} after these ${lines.length} were left out: call browser_snapshot with offset ${end} for the next ones, or with the selector of a region (a ⟨…⟩ mark of get_tab_content) to list only it`;
    }
    return out;
  }

  /** The element of a ref from a snapshot of this document, checked against what the snapshot saw. */
  function element(ref) {
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

  Object.defineProperty(global, 'FerrySnapshot', { value: Object.freeze({ snapshot, element, infoOf }), enumerable: false });
})(globalThis);
