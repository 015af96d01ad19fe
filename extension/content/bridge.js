// The isolated-world bridge between a page's window.ferry (page/ferry-main.js,
// MAIN world) and the service worker. It creates a MessageChannel at injection
// and hands one end to the page API once; nothing else in the page (other
// scripts, other frames) can read or write that port, and window messages are
// never listened to. It checks the targets of actions with the shared element
// rules (content/element-state.js), adds their state to the page's snapshots,
// numbers the page's updates (doc, seq: the host applies them in order), and
// carries run requests from the service worker to the page API and their results
// back, over one runtime port per frame (FerryWire.PAGE_PORT), opened only once
// the page declares or asks something. Every message and its fields:
// protocol/PAGES.md. Classic script: content scripts cannot be ES modules.
(function ferryBridge() {
  'use strict';
  if (globalThis.__ferryBridge) return;
  globalThis.__ferryBridge = true;

  const W = globalThis.FerryWire;
  const P = W.PAGE;
  const F = W.FRAME;
  const state = globalThis.FerryElementState;
  const channel = new MessageChannel();
  const main = channel.port1;
  // Queued now, at document_start, before any page script can run or post. It
  // carries the channel's names, which the page API cannot load itself.
  window.postMessage({ type: W.HANDSHAKE, wire: { PAGE: W.PAGE, OP: W.OP, TARGET_EVENT: W.TARGET_EVENT } }, '*', [channel.port2]);

  // This document's identity and the number of its latest update.
  const doc = typeof crypto?.randomUUID === 'function' ? crypto.randomUUID() : `${Date.now()}-${Math.random()}`;
  let seq = 0;

  // Target elements the page API announces by an event dispatched on them.
  const targets = new Map(); // key → element
  window.addEventListener(W.TARGET_EVENT, (e) => {
    if (typeof e.detail !== 'string') return;
    const el = e.composedPath?.()[0] ?? e.target;
    if (el && el.nodeType === 1) targets.set(e.detail, el);
    e.stopImmediatePropagation();
  }, true);

  function targetProblem(el, opts) {
    if (!el) return { state: 'missing', reason: 'the element the action acts on is not in the page' };
    const p = state.problem(el, opts);
    if (p?.state === 'missing') p.reason = 'the element the action acts on is no longer in the page';
    if (p) p.reason = `the target ${p.reason}`;
    return p;
  }

  /** Adds target states to a snapshot from the page API. */
  function withTargets(snap) {
    if (!snap || !Array.isArray(snap.actions)) return snap;
    for (const a of snap.actions) {
      if (typeof a.target !== 'string') continue;
      const el = targets.get(a.target);
      targets.delete(a.target);
      const p = targetProblem(el, { scroll: false });
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
    const p = chrome.runtime.connect({ name: W.PAGE_PORT });
    sw = p;
    p.onMessage.addListener(onWorker);
    p.onDisconnect.addListener(() => {
      sw = null;
      main.postMessage({ t: P.STATUS, connected: false, reason: 'the extension restarted' });
      // The worker went away (Chrome stops idle workers): tell the new one again.
      if (lastUpdate) setTimeout(() => { if (!sw) resend(); }, 100);
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
  // The latest declarations again, as a newer update (the host may have gone too).
  function resend() {
    if (!lastUpdate) return;
    lastUpdate = { ...lastUpdate, seq: ++seq };
    toWorker(lastUpdate);
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
      case P.UPDATE:
        lastUpdate = {
          t: F.UPDATE, doc, seq: ++seq, actions: msg.actions, snapshot: withTargets(msg.snapshot),
          title: String(msg.title ?? ''), permissions: msg.permissions ?? {},
        };
        toWorker(lastUpdate);
        break;
      case P.CALL:
        toWorker({ t: F.CALL, rid: msg.rid, op: msg.op, name: msg.name, arguments: msg.arguments, trace_id: msg.trace_id, depth: msg.depth });
        break;
      case P.HELLO:
        toWorker({ t: F.HELLO });
        break;
      case P.DONE: {
        const resolve = runs.get(msg.rid);
        runs.delete(msg.rid);
        resolve?.(msg.out);
        break;
      }
    }
  };

  async function run(req) {
    const base = { id: req.id, arguments: req.arguments ?? {}, call_id: req.call_id };
    const prep = await askMain({ t: P.PREPARE, ...base });
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
      t: P.EXEC, ...base, trace_id: req.trace_id, depth: req.depth, granted: req.granted, timeout_ms: req.timeout_ms,
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
      case F.RUN:
        run(msg.req).then(
          (out) => sw?.postMessage({ t: F.RAN, rid: msg.rid, out }),
          (err) => sw?.postMessage({ t: F.RAN, rid: msg.rid, out: { ok: false, code: 'HANDLER_ERROR', reason: String(err?.message ?? err) } }),
        );
        break;
      case F.CONFIRM: {
        // The page's own confirmation of one of its actions: the page API answers
        // when the page calls ferry.confirmTool / rejectTool with this call id, or at
        // once {answered: false} when it has no confirm listener.
        const req = msg.req ?? {};
        askMain({ t: P.CONFIRM, call_id: req.call_id, id: req.id, arguments: req.arguments ?? {}, message: req.message })
          .then((out) => sw?.postMessage({ t: F.CONFIRMED, rid: msg.rid, out: out ?? { answered: false } }));
        break;
      }
      case F.CONFIRM_DONE:
        main.postMessage({ t: P.CONFIRM_DONE, call_id: msg.call_id, approved: Boolean(msg.approved), by: msg.by });
        break;
      case F.DENIED:
        main.postMessage({ t: P.DENIED, id: msg.id, call_id: msg.call_id, code: msg.code, reason: msg.reason, trace_id: msg.trace_id, depth: msg.depth });
        break;
      case F.REPLY:
        main.postMessage({ t: P.REPLY, rid: msg.rid, result: msg.result, error: msg.error, code: msg.code });
        break;
      case F.REFUSED:
        main.postMessage({ t: P.REFUSED, refused: msg.refused, cut: msg.cut });
        break;
      case F.STATUS:
        main.postMessage({ t: P.STATUS, connected: Boolean(msg.connected), reason: msg.reason, disabled: Boolean(msg.disabled) });
        break;
    }
  }
  // A page restored from the back/forward cache lost its port: declare again.
  window.addEventListener('pageshow', (e) => {
    if (e.persisted && lastUpdate) { sw = null; resend(); }
  });
})();
