// window.ferry: the page API, injected by the extension into the MAIN world of
// http(s) pages at document_start, before the page's own scripts. It keeps the
// page's declared actions (the list and the shorthand dialects), the page's WebMCP tools
// (page/webmcp.js: the browser's own modelContext, or Ferry's shim) and a
// wu-framework app's actions, runs them when the host asks, and talks to the
// extension's isolated-world bridge (content/bridge.js) over a MessageChannel port
// that the bridge hands over once, at injection. Every message and its fields:
// protocol/PAGES.md. Classic script, no imports: MAIN-world content scripts cannot
// be modules. Everything is inside one function so nothing but `ferry` (and the
// WebMCP shim) reaches the page's globals; page/webmcp.js, which runs just before,
// is taken from the global object and deleted here.
(function ferryPageAPI(win) {
  'use strict';
  const KEY = Symbol.for('ferry.page');
  if (win[KEY]) return;

  const WEBMCP = Symbol.for('ferry.webmcp');
  const startWebMCP = win[WEBMCP];
  delete win[WEBMCP];

  const DEFAULT_EXPECT_MS = 2000;
  const MAX_ROWS = 200; // records of one collection in a snapshot
  const MAX_LOG = 100; // executions kept for getStats()
  // The one name of the channel the page API knows by itself: the handshake's type
  // (FerryWire.HANDSHAKE; a test holds them equal). The others (lib/wire-names.js) come
  // with the handshake from the bridge: Chrome injects a file into one world of a
  // frame only, so the MAIN world cannot load lib/wire-names.js beside the bridge.
  const HANDSHAKE = 'ferry:bridge-port';
  let T = {}; // message types (FerryWire.PAGE), from the handshake
  let OP = {}; // call operations (FerryWire.OP)
  let TARGET_EVENT = ''; // FerryWire.TARGET_EVENT

  // ---- the private channel ----
  let port = null;
  const outbox = []; // [type key, body] until the handshake
  // Sends a message of the type named by key (a key of FerryWire.PAGE).
  function post(key, body) {
    if (port) port.postMessage({ t: T[key], ...body });
    else outbox.push([key, body]);
  }
  // Registered before any page script runs, in the capture phase of the window,
  // so this listener is the first to see the bridge's handshake; it stops the
  // event there, so no page script ever sees the port. Only the first handshake
  // counts: the bridge's is queued at injection, before any page script could
  // post one.
  function onHandshake(e) {
    if (port || e.source !== win || !e.data || e.data.type !== HANDSHAKE || !e.ports || e.ports.length !== 1) return;
    e.stopImmediatePropagation();
    const wire = e.data.wire ?? {};
    T = { ...wire.PAGE };
    OP = { ...wire.OP };
    TARGET_EVENT = String(wire.TARGET_EVENT ?? '');
    port = e.ports[0];
    port.onmessage = (m) => onBridge(m.data);
    win.removeEventListener('message', onHandshake, true);
    for (const [key, body] of outbox.splice(0)) post(key, body);
    if (flushWaiting) schedule(0);
  }
  if (win.addEventListener) win.addEventListener('message', onHandshake, true);

  // ---- normalisation of the declaration dialects to one wire shape ----
  function plain(value) {
    // RegExp patterns (the list dialect writes pattern: /\S/) become their source.
    return JSON.parse(JSON.stringify(value, (k, v) => (v instanceof RegExp ? v.source : v)) ?? 'null');
  }
  function normalizeAction(id, config) {
    if (typeof id !== 'string' || id.trim() === '') throw new TypeError('ferry.action: the id must be a non-empty string');
    const c = config ?? {};
    const run = typeof c.run === 'function' ? c.run : typeof c.handler === 'function' ? c.handler : null;
    if (!run && (c.target === undefined || c.target === null)) {
      throw new TypeError(`ferry.action ${id}: give it a handler (run or handler) or a target element for Ferry to drive`);
    }
    const expect = c.expect && typeof c.expect === 'object' ? c.expect : null;
    if (expect && typeof expect.check !== 'function') throw new TypeError(`ferry.action ${id}: expect.check must be a function`);
    const params = c.params ?? c.parameters ?? c.inputSchema;
    let kind = c.kind;
    if (kind === undefined && c.annotations) kind = c.annotations.readOnlyHint ? 'read' : 'write';
    const decl = {
      id,
      title: c.title === undefined ? '' : String(c.title),
      description: String(c.desc ?? c.description ?? ''),
      kind: kind ?? 'write',
      parameters: params === undefined ? null : plain(params),
      record: typeof c.record === 'string' ? c.record : '',
      confirm: Boolean(c.confirm),
      dangerous: Boolean(c.dangerous),
      permissions: Array.isArray(c.permissions) ? c.permissions.map(String) : [],
      has_expect: Boolean(expect),
      expect_desc: expect ? String(expect.desc ?? expect.description ?? '') : '',
      expect_timeout_ms: expect && Number.isFinite(expect.timeout) ? expect.timeout : 0,
      has_target: c.target !== undefined && c.target !== null,
      has_handler: Boolean(run),
      timeout_ms: Number.isFinite(c.timeout) ? c.timeout : 0,
      untrusted: Boolean(c.untrusted ?? c.annotations?.untrustedContentHint),
      source: c.source === 'webmcp' || c.source === 'wu' ? c.source : 'ferry',
    };
    for (const k of Object.keys(decl)) if (decl[k] === '' || decl[k] === 0 || decl[k] === false || decl[k] === null) delete decl[k];
    if (decl.permissions?.length === 0) delete decl.permissions;
    return { decl, run, available: typeof c.available === 'function' ? c.available : null, expect, target: c.target ?? null, config: c };
  }

  // ---- state ----
  const actions = new Map(); // id → normalized: the page's own ferry.action declarations
  const webTools = new Map(); // name → normalized: the page's WebMCP tools
  const wuTools = new Map(); // name → normalized: a wu-framework app's actions
  let wuSig = ''; // what wu.ai.tools() said last (empty: read it again)
  // Every action the page offers: its own first, then WebMCP tools and wu actions
  // whose names are not taken.
  function allActions() {
    const out = new Map(actions);
    for (const m of [webTools, wuTools]) for (const [k, v] of m) if (!out.has(k)) out.set(k, v);
    return out;
  }
  const findAction = (id) => actions.get(id) ?? webTools.get(id) ?? wuTools.get(id);
  const records = new Map(); // collection → getter
  const listeners = new Map(); // event → Set<fn>
  let store = null;
  let pagePermissions = { readStore: true, writeStore: false, emitEvents: true };
  let activeRegion = '';
  const regions = new Map();

  function emitLocal(event, data) {
    for (const fn of [...(listeners.get(event) ?? [])]) {
      try { fn({ type: event, data }); } catch (err) { console.error('ferry: listener failed', err); }
    }
  }

  function reasonOf(v, id) {
    if (v === true || v === undefined || v === null) return null;
    if (typeof v === 'string') return v || `${id} is not available now`;
    if (v === false) return `${id} is not available now`;
    if (typeof v === 'object' && 'ok' in v) return v.ok ? null : String(v.reason ?? `${id} is not available now`);
    return null;
  }
  function check(a, row) {
    if (!a.available) return null;
    try {
      return reasonOf(row === undefined ? a.available() : a.available(row), a.decl.id);
    } catch (err) {
      return `the availability check of ${a.decl.id} failed: ${err?.message ?? err}`;
    }
  }
  function resolveTarget(t) {
    const v = typeof t === 'function' ? t() : t;
    if (!v) return null;
    if (typeof v === 'string') return document.querySelector(v);
    if (typeof v === 'object' && 'current' in v) return v.current ?? null;
    return v.nodeType === 1 ? v : null;
  }
  // Hands the target element to the bridge (same DOM, other world) by an event
  // dispatched on it: the bridge checks it there.
  function announceTarget(key, a) {
    let el = null;
    try { el = resolveTarget(a.target); } catch { el = null; }
    if (el && el.dispatchEvent && TARGET_EVENT) el.dispatchEvent(new CustomEvent(TARGET_EVENT, { detail: key, composed: true }));
    return Boolean(el);
  }

  // ---- regions: an exposure rule (actions of another region than the active one
  // are not shown to the model; a call by id still runs) ----
  function regionElement(el) {
    try { return resolveTarget(el); } catch { return null; }
  }
  function regionContaining(node) {
    if (!node) return '';
    for (const [name, el] of regions) {
      const r = regionElement(el);
      if (r && (r === node || r.contains(node))) return name;
    }
    return '';
  }
  // Set by ferry.setRegion, else the region that contains the focus.
  function currentRegion() {
    if (activeRegion) return activeRegion;
    return regionContaining(document.activeElement);
  }
  function regionOfAction(a) {
    if (a.config.region) return String(a.config.region);
    if (!a.decl.has_target || regions.size === 0) return '';
    let el = null;
    try { el = resolveTarget(a.target); } catch { el = null; }
    return regionContaining(el);
  }

  function rowsOf(collection) {
    const getter = records.get(collection);
    if (!getter) return [];
    let rows;
    try { rows = getter(); } catch (err) { console.error(`ferry: records ${collection} failed`, err); return []; }
    return Array.isArray(rows) ? rows.filter((r) => r && r.id !== undefined && r.id !== null) : [];
  }

  function snapshot() {
    const recs = {};
    for (const name of records.keys()) {
      const rows = rowsOf(name);
      recs[name] = {
        total: rows.length,
        rows: rows.slice(0, MAX_ROWS).map((r) => {
          const { id, ...fields } = r;
          let f;
          try { f = plain(fields); } catch { f = {}; }
          return { id: String(id), fields: f };
        }),
      };
    }
    const states = [];
    for (const a of allActions().values()) {
      const id = a.decl.id;
      const st = { id, available: true };
      if (a.decl.record) {
        st.instances = rowsOf(a.decl.record).slice(0, MAX_ROWS).map((row) => {
          const reason = check(a, row);
          return reason ? { record: String(row.id), available: false, reason } : { record: String(row.id), available: true };
        });
        st.available = st.instances.some((i) => i.available);
      } else {
        const reason = check(a, undefined);
        if (reason) Object.assign(st, { available: false, reason });
      }
      if (a.decl.has_target && announceTarget(`snap:${id}`, a)) st.target = `snap:${id}`;
      else if (a.decl.has_target) Object.assign(st, { available: false, reason: st.reason ?? `the element ${id} acts on is not in the page` });
      const region = regionOfAction(a);
      if (region) st.region = region;
      states.push(st);
    }
    const snap = { actions: states, records: recs };
    const active = currentRegion();
    if (active) snap.region = active;
    return snap;
  }

  // ---- pushing declarations and snapshots ----
  let scheduled = null;
  let lastSent = '';
  let declared = false; // the page has declared something: worth a port to the extension
  function schedule(delay = 30) {
    if (!declared || scheduled !== null) return;
    scheduled = setTimeout(flush, delay);
  }
  let flushWaiting = false; // a flush before the handshake: sent once the port is here
  function flush() {
    scheduled = null;
    if (!port) {
      flushWaiting = true;
      return;
    }
    flushWaiting = false;
    const decls = [...allActions().values()].map((a) => a.decl);
    const snap = snapshot();
    const permissions = { ...pagePermissions };
    const body = JSON.stringify({ decls, snap, permissions });
    if (body === lastSent) return;
    lastSent = body;
    post('UPDATE', { actions: decls, snapshot: snap, title: document.title, permissions });
  }
  let observer = null;
  function observe() {
    if (observer || typeof MutationObserver !== 'function' || !document.documentElement) return;
    observer = new MutationObserver(() => schedule(50));
    observer.observe(document.documentElement, { childList: true, subtree: true, attributes: true, characterData: true });
  }
  let focusWatched = false;
  function declaredSomething() {
    declared = true;
    if (!focusWatched && win.addEventListener) {
      focusWatched = true;
      win.addEventListener('focusin', () => { if (regions.size) schedule(0); }, true);
      win.addEventListener('focusout', () => { if (regions.size) schedule(0); }, true);
    }
    if (document.documentElement) observe();
    else document.addEventListener('DOMContentLoaded', observe, { once: true });
    schedule(0);
  }

  // ---- calls the page makes through the host ----
  let nextRid = 1;
  const waiting = new Map(); // rid → {resolve, reject}
  function ask(op, body) {
    const rid = nextRid++;
    return new Promise((resolve, reject) => {
      waiting.set(rid, { resolve, reject });
      post('CALL', { rid, op: OP[op], ...body });
    });
  }

  // ---- causes: api.emit carries the call's trace; a call the page makes while an
  // emitted event is being handled (or that names the event's cause) continues that
  // trace one level deeper, so that the host's loop guard cuts an action → event →
  // trigger → action cycle. ----
  let currentCause = null;
  function causeOf(opts) {
    const c = opts && typeof opts === 'object' && typeof opts.traceId === 'string' && opts.traceId ? opts : currentCause;
    if (!c) return {};
    return { trace_id: String(c.traceId), depth: (Number.isFinite(c.depth) ? c.depth : 0) + 1 };
  }

  // ---- running an action when the host asks ----
  function withTimeout(promise, ms, onTimeout) {
    let timer;
    return Promise.race([promise, new Promise((_, reject) => { timer = setTimeout(() => reject(onTimeout()), ms); })])
      .finally(() => clearTimeout(timer));
  }
  function waitFor(checkFn, ms) {
    return new Promise((resolve) => {
      const start = performance.now();
      let done = false;
      let mo = null;
      let raf = 0;
      let poll = 0;
      let timer = 0;
      const finish = (met) => {
        if (done) return;
        done = true;
        mo?.disconnect();
        if (raf) cancelAnimationFrame(raf);
        clearInterval(poll);
        clearTimeout(timer);
        resolve({ met, waited_ms: Math.round(performance.now() - start) });
      };
      const test = () => {
        if (done) return;
        let ok = false;
        try { ok = Boolean(checkFn()); } catch { ok = false; }
        if (ok) finish(true);
      };
      test();
      if (done) return;
      mo = new MutationObserver(test);
      mo.observe(document.documentElement, { childList: true, subtree: true, attributes: true, characterData: true });
      const frame = () => { test(); if (!done) raf = requestAnimationFrame(frame); };
      raf = requestAnimationFrame(frame);
      poll = setInterval(test, 50); // background tabs get no animation frames
      timer = setTimeout(() => { test(); finish(false); }, ms);
    });
  }
  function api(a, msg, row) {
    const granted = new Set(msg.granted ?? []);
    const out = { traceId: msg.trace_id, depth: msg.depth, callId: msg.call_id };
    if (row !== undefined) out.record = row;
    if (pagePermissions.readStore !== false && granted.has('readStore') && store) out.getState = (path) => storeGet(path);
    if (pagePermissions.writeStore === true && granted.has('writeStore') && (a.decl.permissions ?? []).includes('writeStore') && store) {
      out.setState = (path, value) => storeSet(path, value);
    }
    if (pagePermissions.emitEvents !== false && granted.has('emitEvents')) {
      out.emit = (event, data) => {
        const detail = { data, traceId: msg.trace_id, depth: msg.depth, source: 'ferry-ai' };
        const outer = currentCause;
        currentCause = { traceId: msg.trace_id, depth: msg.depth };
        try {
          emitLocal(String(event), detail);
          win.dispatchEvent(new CustomEvent(`ferry:${event}`, { detail }));
        } finally {
          currentCause = outer;
        }
      };
    }
    return Object.freeze(out);
  }
  function storeGet(path) {
    if (typeof store.getState === 'function') return store.getState(path);
    return String(path ?? '').split('.').filter(Boolean).reduce((o, k) => (o == null ? undefined : o[k]), store);
  }
  function storeSet(path, value) {
    if (typeof store.setState === 'function') return store.setState(path, value);
    const keys = String(path).split('.').filter(Boolean);
    const last = keys.pop();
    let o = store;
    for (const k of keys) o = o[k] ?? (o[k] = {});
    o[last] = value;
  }
  function fill(form, args) {
    for (const [name, value] of Object.entries(args ?? {})) {
      const field = form.elements?.namedItem?.(name) ?? form.querySelector(`#${CSS.escape(name)}`);
      if (!field || !('value' in field)) continue;
      const proto = Object.getPrototypeOf(field);
      const setter = Object.getOwnPropertyDescriptor(proto, 'value')?.set;
      if (setter) setter.call(field, String(value)); else field.value = String(value);
      field.dispatchEvent(new Event('input', { bubbles: true }));
      field.dispatchEvent(new Event('change', { bubbles: true }));
    }
  }
  // No run or handler: drive the target as a person would.
  async function drive(a, args) {
    const el = resolveTarget(a.target);
    if (!el) throw new Error(`the element ${a.decl.id} acts on is not in the page`);
    if (el.tagName === 'FORM') {
      fill(el, args);
      if (typeof el.requestSubmit === 'function') el.requestSubmit(); else el.submit();
    } else {
      el.click();
    }
    return null;
  }
  function safe(v) {
    if (v === undefined) return null;
    try { return plain(v); } catch { return String(v); }
  }

  const recordOf = (msg) => String(msg.arguments?.record ?? '');
  async function prepare(msg) {
    const a = findAction(msg.id);
    if (!a) return { ok: false, code: 'ACTION_UNAVAILABLE', reason: `the page no longer declares ${msg.id}` };
    let row;
    if (a.decl.record) {
      row = rowsOf(a.decl.record).find((r) => String(r.id) === recordOf(msg));
      if (!row) return { ok: false, code: 'ACTION_UNAVAILABLE', reason: `no ${a.decl.record} record has the id ${JSON.stringify(recordOf(msg))}` };
    }
    const reason = check(a, row);
    if (reason) {
      denied({ action: msg.id, reason, callId: msg.call_id, code: 'ACTION_UNAVAILABLE', by: 'page' });
      return { ok: false, code: 'ACTION_UNAVAILABLE', reason };
    }
    const before = snapshot();
    let target = '';
    if (a.decl.has_target) {
      if (!announceTarget(`run:${msg.call_id}`, a)) return { ok: false, code: 'ACTION_UNAVAILABLE', reason: `the element ${msg.id} acts on is not in the page` };
      target = `run:${msg.call_id}`;
    }
    return { ok: true, before, target };
  }

  async function exec(msg) {
    const a = findAction(msg.id);
    if (!a) return { ok: false, code: 'ACTION_UNAVAILABLE', reason: `the page no longer declares ${msg.id}` };
    const row = a.decl.record ? rowsOf(a.decl.record).find((r) => String(r.id) === recordOf(msg)) : undefined;
    const args = { ...(msg.arguments ?? {}) };
    let result;
    const ms = msg.timeout_ms > 0 ? msg.timeout_ms : 30000;
    // Wall-clock stamps (epoch ms, fractional) the host compares with its own.
    const stamp = () => performance.timeOrigin + performance.now();
    const timing = { handler_start: stamp() };
    try {
      const work = a.run ? Promise.resolve().then(() => a.run(args, api(a, msg, row))) : drive(a, args);
      result = await withTimeout(work, ms, () => Object.assign(new Error(`${msg.id} did not finish within ${ms} ms`), { timedOut: true }));
      result = mcpResult(result);
      timing.handler_end = stamp();
    } catch (err) {
      const reason = err?.timedOut ? err.message : `${msg.id} failed: ${err?.message ?? err}`;
      emitLocal('error', { action: msg.id, error: reason, callId: msg.call_id });
      return { ok: false, code: err?.timedOut ? 'TIMEOUT' : 'HANDLER_ERROR', reason, ran: true, snapshot_after: snapshot() };
    }
    let expect;
    if (a.expect) {
      const timeout = Number.isFinite(a.expect.timeout) && a.expect.timeout > 0 ? a.expect.timeout : DEFAULT_EXPECT_MS;
      const got = await waitFor(() => a.expect.check(args, result), timeout);
      expect = { desc: String(a.expect.desc ?? a.expect.description ?? ''), met: got.met, waited_ms: got.waited_ms, timeout_ms: timeout };
      if (!got.met) {
        emitLocal('error', { action: msg.id, error: 'expectation not met', callId: msg.call_id });
        return {
          ok: false, code: 'EXPECTATION_FAILED', ran: true, expect, snapshot_after: snapshot(),
          reason: `the page did not show it within ${timeout} ms`,
        };
      }
    }
    const out = { ok: true, ran: true, result: safe(result), snapshot_after: snapshot(), timing };
    if (expect) out.expect = expect;
    if (a.decl.untrusted) out.untrusted = true;
    log.push({ action: msg.id, params: args, result: out.result, traceId: msg.trace_id, callId: msg.call_id, time: new Date().toISOString() });
    if (log.length > MAX_LOG) log.shift();
    emitLocal('executed', { action: msg.id, params: args, result: out.result, traceId: msg.trace_id, callId: msg.call_id });
    schedule(0);
    return out;
  }

  // MCP's tool result ({content, isError}, what MCP-B and usewebmcp return): an error
  // is the handler's failure with the content's text; a success is its structured
  // content, else its text.
  function mcpResult(v) {
    if (!v || typeof v !== 'object' || !Array.isArray(v.content) || !v.content.every((c) => c && typeof c.type === 'string')) return v;
    const text = v.content.filter((c) => c.type === 'text').map((c) => String(c.text ?? '')).join('\n');
    if (v.isError === true) throw new Error(text || 'the tool reported an error');
    if (v.structuredContent !== undefined) return v.structuredContent;
    if (v.content.length === 1 && v.content[0].type === 'text') {
      try { return JSON.parse(text); } catch { return text; }
    }
    return v.content;
  }

  // ---- what the page can ask of its own page API: its stats ----
  const log = []; // the last MAX_LOG successful executions
  let deniedCount = 0;
  let errorCount = 0;
  const deniedIds = new Set(); // call ids already told as denied
  const warned = new Set(); // refusals already said in the console
  function denied(detail) {
    const id = String(detail.callId ?? '');
    if (id) {
      if (deniedIds.has(id)) return;
      deniedIds.add(id);
      if (deniedIds.size > 500) deniedIds.delete(deniedIds.values().next().value);
    }
    deniedCount++;
    emitLocal('denied', detail);
  }

  // ---- the page's own confirmation of its actions ----
  // call id → {action, rid}: rid is the bridge's request while the page may still
  // answer (null once answered, or when nobody listens).
  const confirms = new Map();
  function answerConfirm(callId, approved) {
    const c = confirms.get(String(callId));
    if (!c || c.rid === null) return false;
    const rid = c.rid;
    c.rid = null;
    post('DONE', { rid, out: { answered: true, approved: Boolean(approved) } });
    return true;
  }
  function onConfirm(msg) {
    const callId = String(msg.call_id ?? '');
    const listening = (listeners.get('confirm')?.size ?? 0) > 0;
    confirms.set(callId, { action: String(msg.id ?? ''), rid: listening ? msg.rid : null });
    if (!listening) {
      post('DONE', { rid: msg.rid, out: { answered: false } });
      return;
    }
    emitLocal('confirm', { callId, action: String(msg.id ?? ''), params: msg.arguments ?? {}, message: String(msg.message ?? '') });
  }
  function onConfirmDone(msg) {
    const callId = String(msg.call_id ?? '');
    const c = confirms.get(callId);
    if (!c) return;
    confirms.delete(callId);
    if (c.rid !== null) post('DONE', { rid: c.rid, out: { answered: false } });
    emitLocal('confirmed', { callId, action: c.action, approved: Boolean(msg.approved), by: String(msg.by ?? '') });
    if (!msg.approved) {
      const reason = msg.by === 'timeout' ? 'the confirmation timed out' : msg.by === 'page' ? 'rejected by the page' : 'the confirmation was declined';
      denied({ action: c.action, reason, callId, by: String(msg.by ?? ''), code: msg.by === 'timeout' ? 'CONFIRM_TIMEOUT' : 'USER_REJECTED' });
    }
  }

  async function onBridge(msg) {
    if (!msg || typeof msg !== 'object') return;
    if (msg.t === T.REPLY) {
      const w = waiting.get(msg.rid);
      if (!w) return;
      waiting.delete(msg.rid);
      if (msg.error) w.reject(Object.assign(new Error(msg.error), msg.code ? { code: msg.code } : {})); else w.resolve(msg.result);
      return;
    }
    if (msg.t === T.REFUSED) {
      for (const r of msg.refused ?? []) {
        // Said once in the console, and only for the page's own ferry.action
        // declarations: a page's WebMCP tools and wu actions keep the page's console
        // as it is without Ferry (the refused event still tells).
        const key = `${r.id}\n${r.reason}`;
        if (actions.has(r.id) && !warned.has(key)) {
          warned.add(key);
          console.warn(`ferry: the action ${r.id} was refused: ${r.reason}`);
        }
        emitLocal('refused', r);
      }
      if (msg.cut) emitLocal('cut', msg.cut);
      return;
    }
    if (msg.t === T.DENIED) {
      denied({ action: String(msg.id ?? ''), reason: String(msg.reason ?? ''), code: String(msg.code ?? ''), callId: String(msg.call_id ?? ''), traceId: msg.trace_id, depth: msg.depth, by: 'host' });
      return;
    }
    if (msg.t === T.STATUS) {
      status = msg;
      // A waiter that is not done (not connected yet) stays until its timeout.
      for (const fn of statusWaiters.splice(0)) if (!fn(msg)) statusWaiters.push(fn);
      return;
    }
    if (msg.t === T.CONFIRM) {
      onConfirm(msg);
      return;
    }
    if (msg.t === T.CONFIRM_DONE) {
      onConfirmDone(msg);
      return;
    }
    if (msg.t === T.PREPARE || msg.t === T.EXEC) {
      let out;
      try {
        out = msg.t === T.PREPARE ? await prepare(msg) : await exec(msg);
      } catch (err) {
        out = { ok: false, code: 'HANDLER_ERROR', reason: String(err?.message ?? err) };
      }
      if (out?.timing) out.timing.done = performance.timeOrigin + performance.now();
      if (out?.code === 'HANDLER_ERROR' || out?.code === 'TIMEOUT' || out?.code === 'EXPECTATION_FAILED') errorCount++;
      post('DONE', { rid: msg.rid, out });
    }
  }
  let status = null;
  const statusWaiters = [];

  // ---- the API ----
  const ferry = {
    action(id, config) {
      const a = normalizeAction(id, config);
      actions.set(id, a);
      declaredSomething();
      return () => {
        if (actions.get(id) === a) {
          actions.delete(id);
          schedule(0);
        }
      };
    },
    records(collection, getter) {
      if (typeof collection !== 'string' || typeof getter !== 'function') throw new TypeError('ferry.records(collection, getter)');
      records.set(collection, getter);
      declaredSomething();
      return () => {
        if (records.get(collection) === getter) {
          records.delete(collection);
          schedule(0);
        }
      };
    },
    region(name, element) {
      const key = String(name);
      regions.set(key, element);
      declaredSomething();
      return () => {
        if (regions.get(key) === element) {
          regions.delete(key);
          schedule(0);
        }
      };
    },
    setRegion(name) {
      activeRegion = name ? String(name) : '';
      schedule(0);
    },
    // The active region: the one set by setRegion, else the one holding the focus.
    activeRegion() {
      return currentRegion();
    },
    // Answers the page's own confirmation of one of its actions (the confirm event's
    // callId). Any other id — a builtin's, another page's, one already decided — is
    // ignored: false.
    confirmTool(callId) {
      return answerConfirm(callId, true);
    },
    rejectTool(callId) {
      return answerConfirm(callId, false);
    },
    capability(app, name, config) {
      if (!/^[A-Za-z0-9_-]+$/.test(String(app))) throw new TypeError('ferry.capability: app must match [A-Za-z0-9_-]+');
      return ferry.action(`${app}:${name}`, { ...config, app: String(app) });
    },
    removeApp(app) {
      let n = 0;
      for (const id of [...actions.keys()]) {
        if (id.startsWith(`${app}:`)) { actions.delete(id); n++; }
      }
      schedule(0);
      return n;
    },
    // The store the shorthand dialect's sandboxed api reads and writes, and the page's
    // own global flags (readStore and emitEvents on, writeStore off unless turned
    // on here). The host takes the flags as this page's, under its own policy.
    init({ store: s, permissions } = {}) {
      if (s !== undefined) store = s;
      if (permissions) {
        const next = { ...pagePermissions };
        for (const k of ['readStore', 'writeStore', 'emitEvents']) if (k in permissions) next[k] = Boolean(permissions[k]);
        pagePermissions = next;
        schedule(0);
      }
    },
    // Runs one of the tab's page actions through the host's pipeline. Called while an
    // emitted event is handled, or with that event's {traceId, depth} as cause, it
    // continues the event's trace one level deeper.
    execute(name, params, cause) {
      declared = true;
      return ask('EXECUTE', { name: String(name), arguments: params ?? {}, ...causeOf(cause) });
    },
    tools() {
      declared = true;
      return ask('TOOLS', {});
    },
    // The page's stats: the actions registered, the executions logged (the last 100,
    // in memory only), the confirmations waiting for an answer, denials and errors.
    getStats() {
      let pending = 0;
      for (const c of confirms.values()) if (c.rid !== null) pending++;
      return {
        actions: [...allActions().keys()], logSize: log.length, log: log.map((e) => ({ ...e })),
        pendingConfirmations: pending, denied: deniedCount, errors: errorCount,
      };
    },
    // Asks the user's Ferry to start an agent run bound to this tab, with text as the
    // user's message. Only for origins the user allowed (asked the first time, in the
    // side panel); resolves to {conversation_id, run_id} or rejects with the reason.
    ask(text, cause) {
      if (typeof text !== 'string' || text.trim() === '') return Promise.reject(new TypeError('ferry.ask(text) needs the text of the request'));
      if (status?.disabled) return Promise.reject(new Error(status.reason || 'Ferry is turned off for this site'));
      declared = true;
      return ask('ASK', { arguments: { text }, ...causeOf(cause) });
    },
    ready(timeoutMs = 10000) {
      if (status?.disabled) return Promise.reject(new Error(status.reason || 'Ferry is turned off for this site'));
      if (status?.connected) return Promise.resolve(status);
      declared = true;
      post('HELLO', {});
      // Not connected yet is not an answer: the extension may still be starting its
      // host. It resolves once connected, or rejects at the timeout with the last reason.
      return new Promise((resolve, reject) => {
        let reason = '';
        const waiter = (s) => {
          if (s.disabled) {
            clearTimeout(timer);
            reject(new Error(s.reason || 'Ferry is turned off for this site'));
            return true;
          }
          if (!s.connected) { reason = s.reason || ''; return false; }
          clearTimeout(timer);
          resolve(s);
          return true;
        };
        const timer = setTimeout(() => {
          const i = statusWaiters.indexOf(waiter);
          if (i >= 0) statusWaiters.splice(i, 1);
          reject(new Error(`Ferry is not connected${reason ? `: ${reason}` : ': is the extension installed and its host running?'}`));
        }, timeoutMs);
        statusWaiters.push(waiter);
      });
    },
    // What the page currently tells the extension: actions with their state, records.
    snapshot() {
      return snapshot();
    },
    on(event, fn) {
      let set = listeners.get(event);
      if (!set) listeners.set(event, (set = new Set()));
      set.add(fn);
      return () => set.delete(fn);
    },
    version: '0.2.0',
  };
  Object.freeze(ferry);

  // ---- WebMCP: the page's tools, from the browser's modelContext or Ferry's shim ----
  function webmcpAction(t) {
    const hints = t.annotations ?? {};
    return normalizeAction(t.name, {
      title: t.title || undefined,
      description: t.description,
      parameters: t.inputSchema,
      kind: hints.readOnlyHint ? 'read' : 'write',
      untrusted: Boolean(hints.untrustedContentHint),
      run: (args) => webmcp.run(t.name, args),
      source: 'webmcp',
    });
  }
  // One read of the tool list at a time, and one more if the list changed during it:
  // every registration is seen, and the last read is the newest.
  let reading = false;
  let readAgain = false;
  async function readWebMCP() {
    if (reading) { readAgain = true; return; }
    reading = true;
    try {
      do {
        readAgain = false;
        let list = [];
        try {
          list = await webmcp.list();
        } catch (err) {
          console.warn('ferry: reading the page\'s WebMCP tools failed', err);
        }
        webTools.clear();
        for (const t of list) {
          try {
            webTools.set(t.name, webmcpAction(t));
          } catch (err) {
            console.warn(`ferry: the WebMCP tool ${t.name} cannot be offered`, err);
          }
        }
        if (webTools.size > 0 || declared) declaredSomething();
        wuSig = ''; // a wu app's actions may be among the WebMCP tools now
      } while (readAgain);
    } finally {
      reading = false;
    }
    schedule(0);
  }
  let webmcp = null;
  try {
    webmcp = typeof startWebMCP === 'function' ? startWebMCP() : null;
    if (webmcp) {
      webmcp.onChange(() => readWebMCP());
      readWebMCP();
    }
  } catch (err) {
    console.warn('ferry: WebMCP not available', err);
  }

  // ---- wu-framework apps: window.wu with _isWuFramework, its wu.ai actions ----
  // Read through the app's own public API (wu.aiReady(), wu.ai.tools(),
  // wu.ai.execute()) and offered as page actions; calls still go through the host's
  // pipeline first, then through wu's own. Actions the app also exposes through
  // WebMCP (wu.ai.expose()) are offered once.
  const WU_POLL_MS = 500;
  async function syncWu(wu) {
    let list = [];
    try {
      list = Array.isArray(wu.ai.tools()) ? wu.ai.tools() : [];
    } catch (err) {
      console.warn('ferry: wu.ai.tools() failed', err);
    }
    const sig = JSON.stringify(list.map((t) => [t?.name, t?.description, t?.parameters]));
    if (sig === wuSig) return;
    wuSig = sig;
    wuTools.clear();
    for (const t of list) {
      if (!t || typeof t.name !== 'string') continue;
      // Exposed through WebMCP too (whose names have no ':'): offered once, there.
      if ([t.name, t.name.replace(/:/g, '.'), t.name.replace(/:/g, '_')].some((n) => webTools.has(n))) continue;
      try {
        wuTools.set(t.name, normalizeAction(t.name, {
          description: t.description, parameters: t.parameters, source: 'wu',
          run: async (args) => {
            const out = await wu.ai.execute(t.name, args);
            if (out && out.success === false) throw new Error(String(out.reason ?? `${t.name} failed`));
            return out && 'result' in out ? out.result : out;
          },
        }));
      } catch (err) {
        console.warn(`ferry: the wu action ${t.name} cannot be offered`, err);
      }
    }
    declaredSomething();
  }
  function watchWu() {
    let tries = 0;
    const find = () => {
      let wu;
      try { wu = win.wu; } catch { return null; }
      return wu && wu._isWuFramework === true && wu.ai && typeof wu.ai.tools === 'function' && typeof wu.ai.execute === 'function' ? wu : null;
    };
    const timer = setInterval(async () => {
      const wu = find();
      if (!wu) {
        if (++tries > 40) clearInterval(timer); // no wu-framework app here after 20 s
        return;
      }
      clearInterval(timer);
      try {
        if (typeof wu.aiReady === 'function') await wu.aiReady();
      } catch (err) {
        console.warn('ferry: wu.aiReady() failed', err);
      }
      await syncWu(wu);
      setInterval(() => syncWu(wu), WU_POLL_MS);
    }, WU_POLL_MS);
  }
  if (win.addEventListener) watchWu();

  Object.defineProperty(win, KEY, { value: true });
  Object.defineProperty(win, 'ferry', { value: ferry, configurable: true, enumerable: false, writable: false });
})(globalThis);
