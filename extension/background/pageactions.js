// Page actions in the service worker: one runtime port per frame from the
// content-script bridges (content/bridge.js), routed to and from the host. Every
// message of every hop, with its fields, is in protocol/PAGES.md; the names are in
// lib/wire-names.js (through lib/wire.js).
//
// Tab, frame and origin always come from the port's sender, never from the page.
// A bridge reaches only the page.* methods, never the host at large. A frame whose
// origin is not its tab's top page's is refused ferry.tools(), ferry.execute() and
// ferry.ask() here (PERMISSION_DENIED naming its origin), and again in the host.
// One update per frame is in flight at a time, the newest waiting behind it, so the
// host hears a frame's declarations in the order the page made them.

import { RPC } from '../lib/host-errors.js';
import { FRAME as F, HOST as H, OP, PAGE_PORT } from '../lib/wire.js';

export { PAGE_PORT };
export const RUN_SLACK_MS = 10_000;

function originOf(url) {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : '';
  } catch {
    return '';
  }
}

/** The refusal of a page request from a frame of another origin than its tab's page. */
export function foreignFrameReason(what, origin, top) {
  return `${what} from a frame of ${origin} is refused: only the tab's top page (${top || 'unknown'}) and its same-origin frames may use Ferry's page API`;
}

export function createPageActions(client, api, { timers = globalThis, logger = console } = {}) {
  const frames = new Map(); // "tab:frame" → {port, tabId, frameId, origin, url, update, runs, confirms, sending, next}
  let nextRid = 1;
  // What this worker sends for frames (updates, removals) is numbered in the order
  // it sends them, increasing across the worker's restarts (the clock, in
  // microseconds, is the floor): the host, which handles requests concurrently,
  // drops one that arrives after a newer one for the same frame.
  let lastOrder = 0;
  const nextOrder = () => (lastOrder = Math.max(lastOrder + 1, Date.now() * 1000));

  const key = (tab, frame) => `${tab}:${frame}`;

  function statusOf() {
    return client.state === 'connected' ? { connected: true } : { connected: false, reason: client.lastError?.message ?? 'not connected to the Ferry host' };
  }

  /** Tells a frame whether Ferry is connected and whether its origin is turned off. */
  async function postStatus(f) {
    const s = statusOf();
    if (s.connected) {
      try {
        const got = await client.request(H.STATUS, { origin: f.origin });
        if (got?.disabled) Object.assign(s, { disabled: true, reason: String(got.reason ?? '') });
      } catch (err) {
        logger.warn('ferry: page.status failed', err?.message ?? err);
      }
    }
    f.port.post({ t: F.STATUS, ...s });
  }

  /** Sends the frame's newest update; one at a time, the newest replacing any waiting one. */
  async function sendUpdate(f) {
    if (!f.update) return;
    if (f.sending) {
      f.again = true;
      return;
    }
    f.sending = true;
    try {
      do {
        f.again = false;
        const u = f.update;
        const params = {
          tab_id: f.tabId, frame_id: f.frameId, origin: f.origin, url: f.url, title: u.title ?? '',
          doc: u.doc, seq: u.seq, order: nextOrder(), permissions: u.permissions ?? {},
          actions: u.actions ?? [], snapshot: u.snapshot ?? { actions: [] },
        };
        try {
          const res = await client.request(H.UPDATE, params);
          if (res?.refused?.length || res?.cut) f.port.post({ t: F.REFUSED, refused: res.refused ?? [], cut: res.cut });
        } catch (err) {
          logger.warn('ferry: page.actions.update failed', err?.message ?? err);
          f.port.post({ t: F.REFUSED, refused: (params.actions ?? []).map((a) => ({ id: a.id, reason: String(err?.message ?? err) })) });
        }
      } while (f.again && frames.get(key(f.tabId, f.frameId)) === f);
    } finally {
      f.sending = false;
    }
  }

  /** The origin of the page the tab shows now, from the browser (never from a page). */
  async function topOrigin(f, sender) {
    if (f.frameId === 0) return f.origin;
    try {
      const tab = await api.tabsGet(f.tabId);
      return originOf(tab?.url ?? '');
    } catch {
      return originOf(sender?.tab?.url ?? '');
    }
  }

  function open(port) {
    const sender = port.sender ?? {};
    const tabId = sender.tab?.id;
    const frameId = sender.frameId ?? 0;
    const url = sender.url ?? '';
    const origin = sender.origin && sender.origin !== 'null' ? sender.origin : originOf(url);
    if (typeof tabId !== 'number' || !origin) {
      port.disconnect();
      return;
    }
    // The tab's snapshot covers its top frame and same-origin frames only.
    const tabOrigin = originOf(sender.tab?.url ?? '');
    const foreign = frameId !== 0 && tabOrigin !== '' && tabOrigin !== origin;
    const f = { port, tabId, frameId, origin, url, update: null, runs: new Map(), confirms: new Map(), foreign, sending: false, again: false };
    const k = key(tabId, frameId);
    frames.get(k)?.port.disconnect?.();
    frames.set(k, f);

    port.onMessage((msg) => {
      if (!msg || typeof msg !== 'object') return;
      switch (msg.t) {
        case F.UPDATE:
          if (f.foreign) {
            port.post({ t: F.REFUSED, refused: (msg.actions ?? []).map((a) => ({ id: a?.id, reason: 'actions of a cross-origin frame are not offered to the agent' })) });
            return;
          }
          f.update = { actions: msg.actions, snapshot: msg.snapshot, title: msg.title, doc: msg.doc, seq: msg.seq, permissions: msg.permissions };
          sendUpdate(f);
          break;
        case F.HELLO:
          if (client.state !== 'connected') client.connect();
          postStatus(f);
          break;
        case F.CALL:
          call(f, msg, sender);
          break;
        case F.CONFIRMED: {
          // Only the answer to a confirmation this frame was sent counts.
          const pending = f.confirms.get(msg.rid);
          if (pending) {
            f.confirms.delete(msg.rid);
            pending.resolve({ answered: Boolean(msg.out?.answered), approved: Boolean(msg.out?.approved) });
          }
          break;
        }
        case F.RAN: {
          const pending = f.runs.get(msg.rid);
          if (pending) {
            f.runs.delete(msg.rid);
            pending.resolve(msg.out);
          }
          break;
        }
      }
    });
    port.onDisconnect(() => {
      if (frames.get(k) !== f) return;
      frames.delete(k);
      for (const p of f.runs.values()) p.reject(Object.assign(new Error('the page navigated or closed while the action ran'), { code: RPC.BROWSER_ERROR, data: { reason: 'gone' } }));
      f.runs.clear();
      for (const p of f.confirms.values()) p.resolve({ answered: false });
      f.confirms.clear();
      if (f.update) client.notify(H.REMOVE, { tab_id: tabId, frame_id: frameId, order: nextOrder() });
    });
    if (client.state === 'connected') postStatus(f);
  }

  const WHAT = { execute: 'ferry.execute', tools: 'ferry.tools', ask: 'ferry.ask' };

  async function call(f, msg, sender) {
    let result;
    let error;
    let code;
    const what = WHAT[msg.op];
    if (!what) {
      f.port.post({ t: F.REPLY, rid: msg.rid, error: `unknown operation ${JSON.stringify(msg.op)}` });
      return;
    }
    const top = await topOrigin(f, sender);
    if (f.origin !== top) {
      const reason = foreignFrameReason(what, f.origin, top);
      if (msg.op === OP.EXECUTE) result = { success: false, code: 'PERMISSION_DENIED', reason };
      else [error, code] = [reason, 'PERMISSION_DENIED'];
      f.port.post({ t: F.REPLY, rid: msg.rid, result, error, code });
      return;
    }
    const cause = typeof msg.trace_id === 'string' && msg.trace_id !== '' ? { trace_id: msg.trace_id, depth: Number(msg.depth) || 0 } : {};
    const where = { tab_id: f.tabId, frame_id: f.frameId, origin: f.origin };
    try {
      if (msg.op === OP.EXECUTE) {
        result = await client.request(H.EXECUTE, {
          ...where, name: String(msg.name ?? ''), arguments: msg.arguments ?? {}, ...cause,
        }, { timeout: 10 * 60_000 });
      } else if (msg.op === OP.ASK) {
        // The origin is the port sender's, never the page's word. The host answers
        // as for any call: {success, result} or {success: false, code, reason}.
        const r = await client.request(H.ASK, { ...where, text: String(msg.arguments?.text ?? ''), ...cause }, { timeout: 10 * 60_000 });
        if (r?.success) result = r.result;
        else [error, code] = [String(r?.reason ?? 'ferry.ask was refused'), r?.code];
      } else {
        result = await client.request(H.LIST, where);
      }
    } catch (err) {
      error = String(err?.message ?? err);
      // A refusal's result code travels by value, beside the message.
      if (typeof err?.data?.code === 'string') code = err.data.code;
    }
    f.port.post({ t: F.REPLY, rid: msg.rid, result, error, code });
  }

  /** host → extension: page.action.run. */
  function run(params) {
    const f = frames.get(key(params?.tab_id, params?.frame_id ?? 0));
    if (!f) {
      return Promise.reject(Object.assign(new Error(`no page in tab ${params?.tab_id} frame ${params?.frame_id ?? 0} declares actions now (closed or navigated away)`), { code: RPC.BROWSER_ERROR, data: { reason: 'no_frame' } }));
    }
    const rid = nextRid++;
    const ms = (params.timeout_ms > 0 ? params.timeout_ms : 30_000) + RUN_SLACK_MS;
    return new Promise((resolve, reject) => {
      const timer = timers.setTimeout(() => {
        f.runs.delete(rid);
        reject(Object.assign(new Error(`the page did not answer within ${ms} ms`), { code: RPC.BROWSER_ERROR, data: { reason: 'timeout' } }));
      }, ms);
      f.runs.set(rid, {
        resolve: (v) => { timers.clearTimeout(timer); resolve(v); },
        reject: (e) => { timers.clearTimeout(timer); reject(e); },
      });
      f.port.post({ t: F.RUN, rid, req: params });
    });
  }

  /** host → extension: page.action.confirm, offered to the frame that declared the action. */
  function confirm(params) {
    const f = frames.get(key(params?.tab_id, params?.frame_id ?? 0));
    if (!f || typeof params.call_id !== 'string' || params.call_id === '') return Promise.resolve({ answered: false });
    const rid = nextRid++;
    const ms = (params.timeout_ms > 0 ? params.timeout_ms : 30_000) + RUN_SLACK_MS;
    return new Promise((resolve) => {
      const timer = timers.setTimeout(() => {
        f.confirms.delete(rid);
        resolve({ answered: false });
      }, ms);
      f.confirms.set(rid, {
        callId: params.call_id,
        resolve: (v) => { timers.clearTimeout(timer); resolve(v); },
      });
      f.port.post({ t: F.CONFIRM, rid, req: params });
    });
  }

  /** host → extension: page.action.confirm.done — how it ended, whoever decided. */
  function confirmDone(params) {
    const f = frames.get(key(params?.tab_id, params?.frame_id ?? 0));
    if (!f) return {};
    for (const [rid, p] of f.confirms) {
      if (p.callId === params.call_id) {
        f.confirms.delete(rid);
        p.resolve({ answered: false });
      }
    }
    f.port.post({ t: F.CONFIRM_DONE, call_id: params.call_id, approved: Boolean(params.approved), by: String(params.by ?? '') });
    return {};
  }

  /** host → extension: page.action.denied — the host refused a call of the frame's action. */
  function denied(params) {
    const f = frames.get(key(params?.tab_id, params?.frame_id ?? 0));
    if (!f) return {};
    f.port.post({
      t: F.DENIED, id: String(params.id ?? ''), call_id: String(params.call_id ?? ''), code: String(params.code ?? ''),
      reason: String(params.reason ?? ''), trace_id: params.trace_id, depth: params.depth,
    });
    return {};
  }

  function register() {
    client.registerHandler(H.RUN, (params) => run(params ?? {}));
    client.registerHandler(H.CONFIRM, (params) => confirm(params ?? {}));
    client.registerHandler(H.CONFIRM_DONE, (params) => confirmDone(params ?? {}));
    client.registerHandler(H.DENIED, (params) => denied(params ?? {}));
    // A host that (re)connects knows nothing of the pages: tell it everything again.
    let was = client.state;
    client.subscribe((snap) => {
      if (snap.state === 'connected' && was !== 'connected') {
        for (const f of frames.values()) {
          sendUpdate(f);
          postStatus(f);
        }
      }
      was = snap.state;
    });
    try {
      api.onTabRemoved((tabId) => {
        let had = false;
        for (const [k, f] of frames) {
          if (f.tabId === tabId) {
            frames.delete(k);
            had = true;
          }
        }
        if (had) client.notify(H.REMOVE, { tab_id: tabId });
      });
    } catch (err) {
      // A fake chrome without tabs (unit tests): frames still go with their ports.
      logger.warn('ferry: no tabs.onRemoved', err?.message ?? err);
    }
  }

  return { open, run, confirm, confirmDone, denied, register, frames };
}
