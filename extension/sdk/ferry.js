// Ferry's page API as an ES module, for pages that import it:
//
//   import ferry from './ferry.js';
//   ferry.action('add_task', {...});
//
// The extension defines window.ferry in every http(s) page before the page's own
// scripts run; this module hands that object out. Without the extension the
// declarations are kept and replayed if window.ferry appears later, and ready()
// rejects after its timeout — never a silent empty list.

const queued = [];
const target = () => globalThis.ferry;

function later(method) {
  return (...args) => {
    const f = target();
    if (f) return f[method](...args);
    let off = null;
    let cancelled = false;
    queued.push(() => { if (!cancelled) off = target()[method](...args); });
    return () => { cancelled = true; if (typeof off === 'function') off(); };
  };
}

function replay() {
  if (!target()) return false;
  for (const fn of queued.splice(0)) fn();
  return true;
}
if (!target() && typeof globalThis.addEventListener === 'function') {
  const timer = setInterval(() => { if (replay()) clearInterval(timer); }, 100);
  setTimeout(() => clearInterval(timer), 10_000);
}

function missing() {
  return Promise.reject(new Error('Ferry is not available: the extension is not installed or not enabled for this page'));
}

const ferry = Object.freeze({
  action: later('action'),
  records: later('records'),
  region: later('region'),
  capability: later('capability'),
  on: later('on'),
  init: (opts) => (target() ? target().init(opts) : queued.push(() => target().init(opts))),
  removeApp: (app) => target()?.removeApp(app) ?? 0,
  setRegion: (name) => target()?.setRegion(name),
  activeRegion: () => target()?.activeRegion() ?? '',
  confirmTool: (callId) => target()?.confirmTool(callId) ?? false,
  rejectTool: (callId) => target()?.rejectTool(callId) ?? false,
  getStats: () => target()?.getStats() ?? { actions: [], logSize: 0, log: [], pendingConfirmations: 0, denied: 0, errors: 0 },
  snapshot: () => target()?.snapshot() ?? null,
  execute: (name, params, cause) => (target() ? target().execute(name, params, cause) : missing()),
  tools: () => (target() ? target().tools() : missing()),
  ask: (text, cause) => (target() ? target().ask(text, cause) : missing()),
  ready: (timeoutMs) => (target() ? target().ready(timeoutMs) : missing()),
  get available() { return Boolean(target()); },
});

export default ferry;
export const {
  action, records, region, capability, on, init, removeApp, execute, tools, ask, ready, getStats, confirmTool, rejectTool,
} = ferry;
