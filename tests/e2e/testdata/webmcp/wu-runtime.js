// A small stand-in for the wu-framework runtime, written for these tests from the
// public API as Ferry's own documents describe it (window.wu with _isWuFramework; wu.ai.action,
// capability, removeApp, tools, execute, expose, confirmTool/rejectTool;
// wu.aiReady; wu.on/emit; apps that mount and unmount). There is no wu-framework
// package on npm to install; this is not its code, only its documented shape.
(function () {
  const listeners = new Map();
  const store = {};
  const actions = new Map(); // name → {description, parameters, handler, permissions, app}
  let aiLoaded = false;
  const flags = { readStore: true, writeStore: false, emitEvents: true };
  const on = (event, fn) => { if (!listeners.has(event)) listeners.set(event, new Set()); listeners.get(event).add(fn); return () => listeners.get(event).delete(fn); };
  const emit = (event, data, meta = {}) => { for (const fn of [...(listeners.get(event) ?? [])]) fn({ event, data, ...meta }); };
  const getPath = (path) => String(path).split('.').reduce((o, k) => (o == null ? undefined : o[k]), store);
  const setPath = (path, value) => { const keys = String(path).split('.'); const last = keys.pop(); let o = store; for (const k of keys) o = o[k] ?? (o[k] = {}); o[last] = value; };
  function schemaOf(parameters = {}) {
    if (parameters.type === 'object') return parameters;
    const properties = {};
    const required = [];
    for (const [k, v] of Object.entries(parameters)) {
      const { required: req, ...rest } = v;
      properties[k] = rest;
      if (req) required.push(k);
    }
    return { type: 'object', properties, required };
  }
  function validate(schema, params) {
    for (const k of schema.required ?? []) if (params[k] === undefined) return `Invalid params: ${k} is required`;
    for (const [k, v] of Object.entries(params)) {
      const t = schema.properties?.[k]?.type;
      if (t && typeof v !== (t === 'integer' ? 'number' : t)) return `Invalid params: ${k} must be a ${t}`;
    }
    return null;
  }
  let trace = 0;
  const ai = {
    init({ permissions } = {}) { Object.assign(flags, permissions); },
    action(name, config) { actions.set(name, { ...config, schema: schemaOf(config.parameters) }); return wu; },
    capability(app, name, config) { return ai.action(`${app}:${name}`, { ...config, app }); },
    removeApp(app) { for (const [k, a] of actions) if (a.app === app) actions.delete(k); },
    tools() {
      if (!aiLoaded) return []; // the lazy proxy: empty until the AI chunk has loaded
      return [...actions].map(([name, a]) => ({ name, description: a.description ?? `Execute: ${name}`, parameters: a.schema }));
    },
    async execute(name, params = {}) {
      const a = actions.get(name);
      if (!a) { emit('ai:action:denied', { action: name }); return { success: false, reason: `Action ${name} is not registered` }; }
      const bad = validate(a.schema, params);
      if (bad) return { success: false, reason: bad };
      const id = `wu-${++trace}`;
      const api = {};
      if (flags.readStore) api.getState = getPath;
      if (flags.writeStore && (a.permissions ?? []).includes('writeStore')) api.setState = setPath;
      if (flags.emitEvents) api.emit = (event, data) => emit(event, data, { traceId: id, depth: 0, source: 'wu-ai' });
      try {
        const result = await a.handler(params, api);
        emit('ai:action:executed', { action: name, params, result, traceId: id });
        return { success: true, result };
      } catch (err) {
        emit('ai:action:error', { action: name, error: String(err.message ?? err) });
        return { success: false, reason: String(err.message ?? err) };
      }
    },
    // Registers the actions with WebMCP, with `handler` for each tool.
    expose() {
      const mc = navigator.modelContext;
      if (!mc) return false;
      for (const t of ai.tools()) mc.registerTool({ name: t.name.replace(':', '.'), description: t.description, inputSchema: t.parameters, handler: (p) => ai.execute(t.name, p) });
      return true;
    },
    getStats() { return { actions: [...actions.keys()] }; },
  };
  const apps = new Map();
  const wu = {
    _isWuFramework: true, version: 'test', ai, on, emit, store,
    aiReady: () => new Promise((resolve) => setTimeout(() => { aiLoaded = true; resolve(); }, 200)),
    define(name, app) { apps.set(name, app); },
    mount(name) { apps.get(name)?.mount?.(wu); emit('app:mounted', { name }); },
    unmount(name) { apps.get(name)?.unmount?.(wu); ai.removeApp(name); emit('app:unmounted', { name }); },
  };
  window.wu = wu;
})();
