// Routes the host's questions to the person and the runs' events to the side
// panel. The host asks through JSON-RPC requests (ui.confirm, ui.ask); this
// module shows them in every open side panel, answers with the first reply and
// takes the card down everywhere else. With no side panel open it refuses at
// once, with a message that says so: the host then denies the call
// (USER_REJECTED) instead of waiting for a timeout nobody can beat.
//
// Nothing here touches chrome.*: panels arrive as wrapped runtime ports
// (lib/chrome-api.js), time comes from `timers`.

import { HostError } from '../lib/host-errors.js';
import { PANEL_PORT } from '../lib/wire.js';

export { PANEL_PORT };

/** Extra time the host's own deadline gets before this side gives up locally. */
export const LOCAL_GRACE_MS = 5_000;
/** Events kept per run for a panel that opens while the run goes on. */
export const MAX_EVENTS_PER_RUN = 5_000;
/** Finished runs whose events are still kept. */
export const MAX_FINISHED_RUNS = 20;

const TERMINAL = new Set(['run_finished', 'run_failed']);

export function noPanelError(what) {
  return new HostError(
    `Ferry's side panel is not open in the browser, so nobody could be asked to ${what}. ` +
      'Open the side panel (the Ferry toolbar button) and try again.',
    { reason: 'no_panel' },
  );
}

/**
 * The reply shapes the host accepts; anything else is refused before it leaves.
 * A lasting answer (lasting: true) only where the request offered one.
 */
export function validateAnswer(method, answer, params = {}) {
  if (method === 'ui.confirm') {
    if (typeof answer?.approved !== 'boolean') return 'a confirmation answer needs approved: true or false';
    if (answer.lasting !== undefined && typeof answer.lasting !== 'boolean') return 'lasting must be true or false';
    if (answer.lasting && !params?.lasting) return 'this request offers no lasting answer';
    return null;
  }
  if (method === 'ui.ask') {
    if (answer === null || typeof answer !== 'object') return 'an answer must be an object';
    const a = answer.answer;
    const ok = a === null || typeof a === 'string' || (Array.isArray(a) && a.every((x) => typeof x === 'string'));
    if (!ok) return 'answer must be a string, a list of strings or null';
    if (answer.reason !== undefined && typeof answer.reason !== 'string') return 'reason must be a string';
    return null;
  }
  return `unknown prompt method ${method}`;
}

/**
 * @param {object} opts
 * @param {{registerHandler: Function, onNotification: Function, subscribe: Function, snapshot: Function}} opts.client
 */
export function createUiRouter({ client, timers = globalThis, logger = console, now = () => Date.now() }) {
  const panels = new Set();
  const prompts = new Map(); // call_id → {method, params, receivedAt, resolve, reject, timer}
  const runs = new Map(); // run_id → {events: [], finished: bool}

  function broadcast(message) {
    for (const port of [...panels]) {
      try {
        port.post(message);
      } catch (err) {
        // The panel closed between the check and the post; its disconnect cleans up.
        logger.warn('ferry: could not post to a side panel', err);
      }
    }
  }

  function promptView(callId, p) {
    return { call_id: callId, method: p.method, params: p.params, received_at: p.receivedAt };
  }

  function close(callId, reason) {
    const p = prompts.get(callId);
    if (!p) return null;
    prompts.delete(callId);
    timers.clearTimeout(p.timer);
    broadcast({ kind: 'prompt_closed', call_id: callId, reason });
    return p;
  }

  function ask(method, params, what) {
    const callId = params?.call_id;
    if (typeof callId !== 'string' || callId === '') {
      return Promise.reject(new HostError(`${method} needs a call_id`, { reason: 'invalid_params', code: -32602 }));
    }
    if (panels.size === 0) return Promise.reject(noPanelError(what(params)));
    return new Promise((resolve, reject) => {
      // A second request for the same call replaces the first (the host retried).
      const prior = prompts.get(callId);
      if (prior) {
        close(callId, 'replaced');
        prior.reject(new HostError('replaced by a newer request for the same call', { reason: 'replaced' }));
      }
      const timeout = Number.isFinite(params.timeout_ms) && params.timeout_ms > 0 ? params.timeout_ms : null;
      const entry = { method, params, receivedAt: now(), resolve, reject, timer: null };
      if (timeout !== null) {
        entry.timer = timers.setTimeout(() => {
          if (prompts.get(callId) !== entry) return;
          close(callId, 'timeout');
          reject(new HostError(`no answer within ${timeout} ms`, { reason: 'timeout' }));
        }, timeout + LOCAL_GRACE_MS);
      }
      prompts.set(callId, entry);
      broadcast({ kind: 'prompt', prompt: promptView(callId, entry) });
    });
  }

  client.registerHandler('ui.confirm', (params) =>
    ask('ui.confirm', params, (p) => `confirm ${p?.tool ?? 'an action'}`));
  client.registerHandler('ui.ask', (params) =>
    ask('ui.ask', params, () => 'answer a question'));

  client.onNotification('ui.cancel', (params) => {
    const callId = params?.call_id;
    const p = close(callId, params?.reason === 'timeout' ? 'timeout' : 'cancelled');
    // The host no longer waits; settle the handler so nothing dangles.
    p?.reject(new HostError(`withdrawn by the host (${params?.reason ?? 'cancelled'})`, { reason: 'withdrawn' }));
  });

  function remember(event) {
    const id = event?.run_id;
    if (typeof id !== 'string' || id === '') return;
    let run = runs.get(id);
    if (!run) runs.set(id, (run = { events: [], finished: false }));
    run.events.push(event);
    if (run.events.length > MAX_EVENTS_PER_RUN) run.events.splice(0, run.events.length - MAX_EVENTS_PER_RUN);
    if (TERMINAL.has(event.type)) {
      run.finished = true;
      const finished = [...runs].filter(([, r]) => r.finished);
      for (const [oldId] of finished.slice(0, Math.max(0, finished.length - MAX_FINISHED_RUNS))) runs.delete(oldId);
    }
  }

  client.onNotification('chat.event', (event) => {
    remember(event);
    broadcast({ kind: 'event', event });
  });
  client.onNotification('tasks.changed', (params) => broadcast({ kind: 'tasks', ...params }));
  // The host keeps the number of open side panels (ui.presence) so that it can
  // deny a confirmation, or hide ask_user, at once when nobody could answer. It
  // hears it on every (re)connect and on every change.
  let lastState = null;
  function sendPresence() {
    client.notify('ui.presence', { panels: panels.size });
  }
  client.subscribe((snapshot) => {
    if (snapshot.state === 'connected' && lastState !== 'connected') sendPresence();
    lastState = snapshot.state;
    broadcast({ kind: 'status', status: snapshot });
  });

  function answer(port, message) {
    const callId = message?.call_id;
    const p = prompts.get(callId);
    if (!p) {
      // Timed out, withdrawn, or answered in another window first.
      port.post({ kind: 'answer_refused', call_id: callId, reason: 'expired' });
      return;
    }
    const problem = validateAnswer(p.method, message.answer, p.params);
    if (problem) {
      port.post({ kind: 'answer_refused', call_id: callId, reason: 'invalid', message: problem });
      return;
    }
    close(callId, 'answered');
    p.resolve(message.answer);
  }

  function openPanel(port) {
    panels.add(port);
    sendPresence();
    port.onDisconnect(() => {
      if (panels.delete(port)) sendPresence();
      // Pending prompts stay: the person may reopen the panel before the host's
      // deadline, and the host withdraws them itself when it stops waiting.
    });
    port.onMessage((message) => {
      switch (message?.kind) {
        case 'answer':
          answer(port, message);
          break;
        case 'replay': {
          const run = runs.get(message.run_id);
          port.post({ kind: 'replay', run_id: message.run_id, events: run ? [...run.events] : [] });
          break;
        }
        default:
          logger.warn('ferry: ignored a side panel message', message?.kind);
      }
    });
    port.post({
      kind: 'hello',
      status: client.snapshot(),
      prompts: [...prompts].map(([id, p]) => promptView(id, p)),
    });
  }

  return {
    openPanel,
    get panelCount() {
      return panels.size;
    },
    get pendingCount() {
      return prompts.size;
    },
  };
}
