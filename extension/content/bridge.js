// The isolated-world bridge between a page's window.ferry (page/ferry-main.js,
// MAIN world) and the service worker. It creates a MessageChannel at injection
// and hands one end to the page API once; nothing else in the page (other
// scripts, other frames) can read or write that port, and window messages are
// never listened to. It checks the targets of actions (disabled, hidden, covered,
// off-screen), adds their state to the page's snapshots, and carries run requests
// from the service worker to the page API and their results back, over one
// runtime port per frame ("ferry-page"), opened only once the page declares
// something. Classic script: content scripts cannot be ES modules.
(function ferryBridge() {
  'use strict';
  if (globalThis.__ferryBridge) return;
  globalThis.__ferryBridge = true;

  const PORT_NAME = 'ferry-page';
  const TARGET_EVENT = '__ferry_target';
  const channel = new MessageChannel();
  const main = channel.port1;
  // Queued now, at document_start, before any page script can run or post.
  window.postMessage({ type: 'ferry:bridge-port' }, '*', [channel.port2]);

  // Target elements the page API announces by an event dispatched on them.
  const targets = new Map(); // key → element
  window.addEventListener(TARGET_EVENT, (e) => {
    if (typeof e.detail !== 'string') return;
    const el = e.composedPath?.()[0] ?? e.target;
    if (el && el.nodeType === 1) targets.set(e.detail, el);
    e.stopImmediatePropagation();
  }, true);

  function describe(el) {
    let s = el.tagName.toLowerCase();
    if (el.id) s += `#${el.id}`;
    const text = (el.getAttribute('aria-label') || el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 40);
    return text ? `${s} "${text}"` : s;
  }

  /** null when a person could use the element now, else {state, reason}. */
  function targetProblem(el, { scroll = false } = {}) {
    if (!el || !el.isConnected) return { state: 'missing', reason: 'the element the action acts on is no longer in the page' };
    const what = describe(el);
    if (el.matches(':disabled') || el.getAttribute('aria-disabled') === 'true') return { state: 'disabled', reason: `the target ${what} is disabled` };
    for (let n = el; n && n.nodeType === 1; n = n.parentElement ?? n.getRootNode()?.host) {
      if (n.inert || n.hasAttribute('inert')) return { state: 'hidden', reason: `the target ${what} is inert` };
      if (n.getAttribute('aria-hidden') === 'true') return { state: 'hidden', reason: `the target ${what} is hidden (aria-hidden)` };
      const cs = getComputedStyle(n);
      if (cs.display === 'none') return { state: 'hidden', reason: `the target ${what} is hidden (display: none)` };
      if (cs.visibility === 'hidden' || cs.visibility === 'collapse') return { state: 'hidden', reason: `the target ${what} is hidden (visibility)` };
      if (Number(cs.opacity) === 0) return { state: 'hidden', reason: `the target ${what} is hidden (opacity 0)` };
    }
    let r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return { state: 'hidden', reason: `the target ${what} has no size` };
    const vw = window.innerWidth || document.documentElement.clientWidth;
    const vh = window.innerHeight || document.documentElement.clientHeight;
    const outside = (b) => b.bottom <= 0 || b.right <= 0 || b.top >= vh || b.left >= vw;
    if (outside(r)) {
      if (!scroll) return null; // snapshots do not scroll; a run does
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      r = el.getBoundingClientRect();
      if (outside(r)) return { state: 'offscreen', reason: `the target ${what} is outside the viewport even after scrolling it into view` };
    }
    if (!outside(r)) {
      const x = Math.min(Math.max(r.left + r.width / 2, 0), vw - 1);
      const y = Math.min(Math.max(r.top + r.height / 2, 0), vh - 1);
      let hit = document.elementFromPoint(x, y);
      while (hit?.shadowRoot) {
        const inner = hit.shadowRoot.elementFromPoint(x, y);
        if (!inner || inner === hit) break;
        hit = inner;
      }
      if (hit && hit !== el && !el.contains(hit) && !(hit.getRootNode()?.host && el.contains(hit.getRootNode().host))) {
        return { state: 'covered', reason: `the target ${what} is covered by ${describe(hit)} at its centre` };
      }
    }
    return null;
  }

  /** Adds target states to a snapshot from the page API. */
  function withTargets(snap) {
    if (!snap || !Array.isArray(snap.actions)) return snap;
    for (const a of snap.actions) {
      if (typeof a.target !== 'string') continue;
      const el = targets.get(a.target);
      targets.delete(a.target);
      const p = el ? targetProblem(el) : { state: 'missing', reason: 'the element the action acts on is not in the page' };
      a.target = p ? p.state : 'ok';
      if (p && a.available) Object.assign(a, { available: false, reason: p.reason });
    }
    return snap;
  }

  // ---- the service worker side ----
  let sw = null;
  let lastUpdate = null;
  function connect() {
    if (sw) return sw;
    // The one chrome.* call of content scripts (they cannot import lib/chrome-api.js).
    const p = chrome.runtime.connect({ name: PORT_NAME });
    sw = p;
    p.onMessage.addListener(onWorker);
    p.onDisconnect.addListener(() => {
      sw = null;
      main.postMessage({ t: 'status', connected: false, reason: 'the extension restarted' });
      // The worker went away (Chrome stops idle workers): tell the new one again.
      if (lastUpdate) setTimeout(() => { if (!sw) { connect(); toWorker(lastUpdate); } }, 100);
    });
    return p;
  }
  function toWorker(msg) {
    try {
      connect().postMessage(msg);
    } catch {
      sw = null;
    }
  }

  const runs = new Map(); // rid → resolve (answers of the page API)
  let nextRid = 1;
  function askMain(msg) {
    const rid = nextRid++;
    return new Promise((resolve) => {
      runs.set(rid, resolve);
      main.postMessage({ ...msg, rid });
    });
  }

  main.onmessage = (e) => {
    const msg = e.data;
    if (!msg || typeof msg !== 'object') return;
    switch (msg.t) {
      case 'update': {
        lastUpdate = { t: 'update', actions: msg.actions, snapshot: withTargets(msg.snapshot), title: String(msg.title ?? '') };
        toWorker(lastUpdate);
        break;
      }
      case 'call':
        toWorker({ t: 'call', rid: msg.rid, op: msg.op, name: msg.name, args: msg.args });
        break;
      case 'hello':
        toWorker({ t: 'hello' });
        break;
      case 'done': {
        const resolve = runs.get(msg.rid);
        runs.delete(msg.rid);
        resolve?.(msg.out);
        break;
      }
    }
  };

  async function run(req) {
    const base = { id: req.id, record: req.record, call_id: req.call_id };
    const prep = await askMain({ t: 'prepare', ...base });
    if (!prep?.ok) return prep ?? { ok: false, code: 'HANDLER_ERROR', reason: 'the page did not answer' };
    const before = prep.before;
    withTargets(before);
    if (prep.target) {
      const el = targets.get(prep.target);
      targets.delete(prep.target);
      const p = targetProblem(el, { scroll: true });
      if (p) return { ok: false, code: 'ACTION_UNAVAILABLE', reason: p.reason, target: p.state };
    }
    const out = await askMain({
      t: 'exec', ...base, args: req.args, trace_id: req.trace_id, depth: req.depth,
      granted: req.granted, timeout_ms: req.timeout_ms,
    });
    if (out) {
      out.snapshot_before = before;
      withTargets(out.snapshot_after);
    }
    return out;
  }

  function onWorker(msg) {
    if (!msg || typeof msg !== 'object') return;
    switch (msg.t) {
      case 'run':
        run(msg.req).then(
          (out) => sw?.postMessage({ t: 'ran', rid: msg.rid, out }),
          (err) => sw?.postMessage({ t: 'ran', rid: msg.rid, out: { ok: false, code: 'HANDLER_ERROR', reason: String(err?.message ?? err) } }),
        );
        break;
      case 'confirm': {
        // The page's own confirmation of one of its actions: the page API answers
        // when the page calls ferry.confirmTool / rejectTool with this call id, or at
        // once {answered: false} when it has no confirm listener.
        const req = msg.req ?? {};
        askMain({ t: 'confirm', call_id: req.call_id, id: req.id, params: req.arguments ?? {}, message: req.message })
          .then((out) => sw?.postMessage({ t: 'confirmed', rid: msg.rid, out: out ?? { answered: false } }));
        break;
      }
      case 'confirm_done':
        main.postMessage({ t: 'confirm_done', call_id: msg.call_id, approved: Boolean(msg.approved), by: msg.by });
        break;
      case 'reply':
        main.postMessage({ t: 'reply', rid: msg.rid, result: msg.result, error: msg.error });
        break;
      case 'refused':
        main.postMessage({ t: 'refused', refused: msg.refused });
        break;
      case 'status':
        main.postMessage({ t: 'status', connected: Boolean(msg.connected), reason: msg.reason, disabled: Boolean(msg.disabled) });
        break;
    }
  }
  // A page restored from the back/forward cache lost its port: declare again.
  window.addEventListener('pageshow', (e) => {
    if (e.persisted && lastUpdate) { sw = null; toWorker(lastUpdate); }
  });
})();
