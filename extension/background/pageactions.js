// Page actions in the service worker: one runtime port per frame from the
// content-script bridges (content/bridge.js), routed to and from the host.
//
//   bridge → worker: update {actions, snapshot, title} → host page.actions.update
//                    call {rid, op: execute|tools, name, args} → host page.actions.execute|list
//                    call {rid, op: ask, args: {text}} → host page.ask (ferry.ask)
//                    hello → status (with disabled and reason when the user turned the
//                            page API off for the origin: host page.status)
//                    ran {rid, out} (the answer to a run)
//   host → worker:   page.action.run {tab_id, frame_id, id, args, …} → bridge run → its out
//                    page.action.confirm {tab_id, frame_id, call_id, id, arguments, message, timeout_ms}
//                      → bridge confirm → {answered, approved} (the page's own answer)
//                    page.action.confirm.done {tab_id, frame_id, call_id, approved, by}
//   bridge → worker: confirmed {rid, out} (the answer to a confirm)
//   worker → host:   page.actions.remove when a frame's port closes or its tab does
//
// Tab, frame and origin always come from the port's sender, never from the page.
// A bridge reaches only these page.actions.* methods, never the host at large.

import { RPC } from '../lib/host-errors.js';

export const PAGE_PORT = 'ferry-page';
export const RUN_SLACK_MS = 10_000;

function originOf(url) {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : '';
  } catch {
    return '';
  }
}

export function createPageActions(client, api, { timers = globalThis, logger = console } = {}) {
  const frames = new Map(); // "tab:frame" → {port, tabId, frameId, origin, url, update, runs}
  let nextRid = 1;

  const key = (tab, frame) => `${tab}:${frame}`;

  function statusOf() {
    return client.state === 'connected' ? { connected: true } : { connected: false, reason: client.lastError?.message ?? 'not connected to the Ferry host' };
  }

  /** Tells a frame whether Ferry is connected and whether its origin is turned off. */
  async function postStatus(f) {
    const s = statusOf();
    if (s.connected) {
      try {
        const got = await client.request('page.status', { origin: f.origin });
        if (got?.disabled) Object.assign(s, { disabled: true, reason: String(got.reason ?? '') });
      } catch (err) {
        logger.warn('ferry: page.status failed', err?.message ?? err);
      }
    }
    f.port.post({ t: 'status', ...s });
  }

  async function sendUpdate(f) {
    if (!f.update) return;
    const params = {
      tab_id: f.tabId, frame_id: f.frameId, origin: f.origin, url: f.url,
      title: f.update.title ?? '', actions: f.update.actions ?? [], snapshot: f.update.snapshot ?? { actions: [] },
    };
    try {
      const res = await client.request('page.actions.update', params);
      if (res?.refused?.length) f.port.post({ t: 'refused', refused: res.refused });
    } catch (err) {
      logger.warn('ferry: page.actions.update failed', err?.message ?? err);
      f.port.post({ t: 'refused', refused: (params.actions ?? []).map((a) => ({ id: a.id, reason: String(err?.message ?? err) })) });
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
    const topOrigin = originOf(sender.tab?.url ?? '');
    const foreign = frameId !== 0 && topOrigin !== '' && topOrigin !== origin;
    const f = { port, tabId, frameId, origin, url, update: null, runs: new Map(), confirms: new Map(), foreign };
    const k = key(tabId, frameId);
    frames.get(k)?.port.disconnect?.();
    frames.set(k, f);

    port.onMessage((msg) => {
      if (!msg || typeof msg !== 'object') return;
      switch (msg.t) {
        case 'update':
          if (f.foreign) {
            port.post({ t: 'refused', refused: (msg.actions ?? []).map((a) => ({ id: a?.id, reason: 'actions of a cross-origin frame are not offered to the agent' })) });
            return;
          }
          f.update = { actions: msg.actions, snapshot: msg.snapshot, title: msg.title };
          sendUpdate(f);
          break;
        case 'hello':
          if (client.state !== 'connected') client.connect();
          postStatus(f);
          break;
        case 'call':
          call(f, msg);
          break;
        case 'confirmed': {
          // Only the answer to a confirmation this frame was sent counts.
          const pending = f.confirms.get(msg.rid);
          if (pending) {
            f.confirms.delete(msg.rid);
            pending.resolve({ answered: Boolean(msg.out?.answered), approved: Boolean(msg.out?.approved) });
          }
          break;
        }
        case 'ran': {
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
      if (f.update) client.notify('page.actions.remove', { tab_id: tabId, frame_id: frameId });
    });
    if (client.state === 'connected') postStatus(f);
  }

  async function call(f, msg) {
    let result;
    let error;
    try {
      if (msg.op === 'execute') {
        result = await client.request('page.actions.execute', {
          tab_id: f.tabId, frame_id: f.frameId, origin: f.origin, name: String(msg.name ?? ''), arguments: msg.args ?? {},
        }, { timeout: 10 * 60_000 });
      } else if (msg.op === 'ask') {
        // The origin is the port sender's, never the page's word.
        result = await client.request('page.ask', {
          tab_id: f.tabId, frame_id: f.frameId, origin: f.origin, text: String(msg.args?.text ?? ''),
        }, { timeout: 3 * 60_000 });
      } else if (msg.op === 'tools') {
        result = await client.request('page.actions.list', { tab_id: f.tabId });
      } else {
        error = `unknown operation ${JSON.stringify(msg.op)}`;
      }
    } catch (err) {
      error = String(err?.message ?? err);
    }
    f.port.post({ t: 'reply', rid: msg.rid, result, error });
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
      f.port.post({ t: 'run', rid, req: params });
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
      f.port.post({ t: 'confirm', rid, req: params });
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
    f.port.post({ t: 'confirm_done', call_id: params.call_id, approved: Boolean(params.approved), by: String(params.by ?? '') });
    return {};
  }

  function register() {
    client.registerHandler('page.action.run', (params) => run(params ?? {}));
    client.registerHandler('page.action.confirm', (params) => confirm(params ?? {}));
    client.registerHandler('page.action.confirm.done', (params) => confirmDone(params ?? {}));
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
        if (had) client.notify('page.actions.remove', { tab_id: tabId });
      });
    } catch (err) {
      // A fake chrome without tabs (unit tests): frames still go with their ports.
      logger.warn('ferry: no tabs.onRemoved', err?.message ?? err);
    }
  }

  return { open, run, confirm, confirmDone, register, frames };
}
