// WebMCP for Ferry's page API (page/ferry-main.js), in the MAIN world at
// document_start, before the page's own scripts.
//
// Where the browser has its own document.modelContext (Chromium with WebMCP on),
// nothing here touches it: Ferry reads the page's tools with getTools(), runs them
// with executeTool() and follows toolchange, so the page keeps every native
// behaviour (its rejections, its declarative forms). Where there is none, this file
// installs a ModelContext shaped as the WebMCP draft and the browsers' implementations
// have it: an EventTarget on Document.prototype.modelContext (navigator.modelContext
// as the older alias), registerTool returning a promise that rejects as the draft's
// algorithm does (duplicate names, empty names or descriptions, names outside
// [A-Za-z0-9_.-]{1,128}, a schema that does not serialise, a signal already
// aborted), unregistration by AbortSignal, getTools, executeTool, toolchange, and
// declarative forms (toolname, tooldescription, toolautosubmit,
// toolparamdescription; SubmitEvent.agentInvoked and respondWith). A page that loads
// its own polyfill finds a modelContext and builds on it, as it would on a native one.
//
// The page API takes the installer from a well-known symbol and deletes it before
// any page script runs: pages see the ModelContext, never Ferry's side of it.
(function ferryWebMCP(win) {
  'use strict';
  const KEY = Symbol.for('ferry.webmcp');
  if (Object.prototype.hasOwnProperty.call(win, KEY) || !win.document) return;
  const doc = win.document;
  const DocumentProto = win.Document?.prototype;
  const NAME = /^[A-Za-z0-9_.-]{1,128}$/;

  function unknownError(message) {
    return new win.DOMException(message, 'UnknownError');
  }
  function invalidState(message) {
    return new win.DOMException(message, 'InvalidStateError');
  }
  const later = (fn) => win.setTimeout(fn, 0);

  // ---- the native ModelContext, when the browser has one ----
  function nativeSource(mc) {
    let registered = new Map(); // name → the RegisteredTool getTools() gave
    return {
      kind: 'native',
      async list() {
        const all = await mc.getTools();
        const mine = (Array.isArray(all) ? all : []).filter((t) => t && (t.window === undefined || t.window === win));
        registered = new Map(mine.map((t) => [String(t.name), t]));
        return mine.map((t) => ({
          name: String(t.name), title: t.title ? String(t.title) : '', description: String(t.description ?? ''),
          inputSchema: typeof t.inputSchema === 'string' ? safeParse(t.inputSchema) : t.inputSchema,
          annotations: typeof t.annotations === 'string' ? safeParse(t.annotations) : t.annotations,
        }));
      },
      async run(name, args) {
        const t = registered.get(name);
        if (!t) throw new Error(`the page no longer registers the WebMCP tool ${name}`);
        let out;
        try {
          out = await mc.executeTool(t, args ?? {});
        } catch (err) {
          throw new Error(err?.message ?? String(err));
        }
        return typeof out === 'string' ? (out === 'undefined' ? undefined : safeParse(out, out)) : out;
      },
      onChange(fn) {
        mc.addEventListener('toolchange', fn);
      },
    };
  }

  function safeParse(s, fallback = undefined) {
    try {
      return JSON.parse(s);
    } catch {
      return fallback;
    }
  }

  // ---- the shim ----
  const tools = new Map(); // name → entry {name, title, description, schema (JSON text), annotations, execute, signal, form}
  const listeners = new Set(); // Ferry's own toolchange listeners (never the page's)
  let context = null;

  function changed() {
    later(() => {
      context?.dispatchEvent(new win.Event('toolchange'));
      for (const fn of listeners) fn();
    });
  }

  function plainCopy(text) {
    return text === undefined ? undefined : JSON.parse(text);
  }

  function registered(e) {
    const t = { name: e.name, title: e.title ?? '', description: e.description };
    if (e.schema !== undefined) t.inputSchema = plainCopy(e.schema);
    t.origin = win.location.origin;
    t.window = win;
    if (e.annotations) t.annotations = { ...e.annotations };
    return t;
  }

  function readTool(tool) {
    if (tool === null || (typeof tool !== 'object' && typeof tool !== 'function')) {
      throw new TypeError("Failed to execute 'registerTool' on 'ModelContext': parameter 1 is not of type 'ModelContextTool'.");
    }
    const member = (k) => {
      const v = tool[k];
      if (v === undefined) throw new TypeError(`Failed to execute 'registerTool' on 'ModelContext': the required member '${k}' of 'ModelContextTool' is undefined.`);
      return v;
    };
    const annotations = tool.annotations;
    const description = String(member('description'));
    // wu-framework's expose() hands `handler` where the draft says `execute`.
    const execute = tool.execute !== undefined ? tool.execute : tool.handler !== undefined ? tool.handler : member('execute');
    if (typeof execute !== 'function') {
      throw new TypeError("Failed to execute 'registerTool' on 'ModelContext': the member 'execute' of 'ModelContextTool' is not a function.");
    }
    const inputSchema = tool.inputSchema;
    const name = String(member('name'));
    const title = tool.title === undefined ? undefined : String(tool.title);
    return { annotations, description, execute, inputSchema, name, title };
  }

  function registerTool(tool, options) {
    let entry;
    try {
      const t = readTool(tool);
      if (tools.has(t.name)) throw invalidState(`a tool named ${JSON.stringify(t.name)} is already registered`);
      if (t.name === '' || t.description === '') throw invalidState('a tool needs a name and a description');
      if (!NAME.test(t.name)) throw invalidState(`the tool name ${JSON.stringify(t.name)} is invalid: 1 to 128 of A-Z a-z 0-9 _ - .`);
      let schema;
      if (t.inputSchema !== undefined) {
        schema = JSON.stringify(t.inputSchema);
        if (schema === undefined) throw new TypeError('the inputSchema does not serialise to JSON');
      }
      const signal = options?.signal;
      if (signal?.aborted) return Promise.reject(signal.reason);
      for (const o of options?.exposedTo ?? []) {
        let u;
        try {
          u = new URL(String(o));
        } catch {
          throw new win.DOMException(`exposedTo: ${JSON.stringify(String(o))} is not a URL`, 'SecurityError');
        }
        const local = u.hostname === 'localhost' || u.hostname === '127.0.0.1' || u.hostname === '[::1]' || u.hostname.endsWith('.localhost');
        if (u.protocol !== 'https:' && !(u.protocol === 'http:' && local) && u.protocol !== 'file:') {
          throw new win.DOMException(`exposedTo: ${u.origin} is not a potentially trustworthy origin`, 'SecurityError');
        }
      }
      const a = t.annotations ?? {};
      entry = {
        name: t.name, title: t.title, description: t.description, schema, execute: t.execute, signal,
        annotations: t.annotations === undefined ? undefined : { readOnlyHint: Boolean(a.readOnlyHint), untrustedContentHint: Boolean(a.untrustedContentHint) },
      };
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      tools.set(entry.name, entry);
      entry.signal?.addEventListener?.('abort', () => {
        if (tools.get(entry.name) === entry) {
          tools.delete(entry.name);
          changed();
        }
        reject(entry.signal.reason);
      }, { once: true });
      changed();
      later(() => later(() => resolve(undefined)));
    });
  }

  async function runEntry(e, input) {
    return e.form ? runForm(e, input) : e.execute.call(undefined, input, agentClient);
  }

  // What an imperative tool's execute receives as its second argument.
  const agentClient = Object.freeze({});

  function inputObject(input) {
    if (typeof input === 'string') {
      const v = safeParse(input);
      if (v === undefined || v === null || typeof v !== 'object' || Array.isArray(v)) throw new TypeError("Failed to execute 'executeTool' on 'ModelContext': the input is not a JSON object.");
      return v;
    }
    if (input === undefined || input === null) return {};
    if (typeof input !== 'object' || Array.isArray(input)) throw new TypeError("Failed to execute 'executeTool' on 'ModelContext': the input is not an object.");
    return structuredClone(input);
  }

  function serialiseResult(v) {
    if (typeof v === 'string') return v;
    const s = JSON.stringify(v);
    return s === undefined ? 'undefined' : s;
  }

  async function executeTool(tool, input, options) {
    if (tool === null || typeof tool !== 'object') throw new TypeError("Failed to execute 'executeTool' on 'ModelContext': parameter 1 is not of type 'RegisteredTool'.");
    for (const k of ['name', 'description', 'window', 'origin']) {
      if (!(k in tool)) throw new TypeError(`Failed to execute 'executeTool' on 'ModelContext': the required member '${k}' of 'RegisteredTool' is undefined.`);
    }
    const signal = options?.signal;
    if (signal?.aborted) throw signal.reason ?? new win.DOMException('signal is aborted without reason', 'AbortError');
    const e = tools.get(String(tool.name));
    if (!e || tool.window !== win || tool.origin !== win.location.origin) throw unknownError(`Tool not found: ${tool.name}`);
    const args = inputObject(input);
    let result;
    try {
      const work = Promise.resolve().then(() => runEntry(e, args));
      result = signal ? await Promise.race([work, new Promise((_, rej) => signal.addEventListener('abort', () => rej(signal.reason), { once: true }))]) : await work;
    } catch (err) {
      if (signal?.aborted && err === signal.reason) throw err;
      throw unknownError(e.form ? String(err?.message ?? err) : 'Tool was executed but the invocation failed. For example, the script function threw an error');
    }
    return serialiseResult(result);
  }

  function shimSource() {
    return {
      kind: 'shim',
      async list() {
        return [...tools.values()].map((e) => ({
          name: e.name, title: e.title ?? '', description: e.description,
          inputSchema: e.schema === undefined ? undefined : JSON.parse(e.schema), annotations: e.annotations,
          form: Boolean(e.form),
        }));
      },
      async run(name, args) {
        const e = tools.get(name);
        if (!e) throw new Error(`the page no longer registers the WebMCP tool ${name}`);
        return runEntry(e, args ?? {});
      },
      onChange(fn) {
        listeners.add(fn);
      },
    };
  }

  // ---- declarative forms ----
  const agentEvents = new WeakSet(); // SubmitEvents an agent caused
  const responses = new WeakMap(); // SubmitEvent → the promise given to respondWith

  // A control's label as the browser's own synthesis reads it: the label's text
  // without the text of the controls inside it (a select's options), trimmed.
  function labelOf(control) {
    const l = control.labels?.[0];
    if (!l) return '';
    const copy = l.cloneNode(true);
    for (const c of copy.querySelectorAll('select, textarea, button, datalist, output')) c.remove();
    return copy.textContent.trim();
  }

  function controlsOf(form) {
    const groups = new Map(); // name → [controls]
    for (const el of form.elements) {
      const name = el.name;
      if (!name || el.disabled) continue;
      const type = (el.type || '').toLowerCase();
      if (['hidden', 'submit', 'button', 'reset', 'image', 'file'].includes(type) || el.localName === 'button' || el.localName === 'fieldset' || el.localName === 'output' || el.localName === 'object') continue;
      if (!groups.has(name)) groups.set(name, []);
      groups.get(name).push(el);
    }
    return groups;
  }

  function numberAttr(el, k) {
    const v = el.getAttribute(k);
    if (v === null || v.trim() === '') return undefined;
    const n = Number(v);
    return Number.isFinite(n) ? n : undefined;
  }

  // [value, title?] pairs: a title when the option has one (its text, a radio's label).
  function choice(values) {
    return { anyOf: values.map(([v, title]) => (title ? { type: 'string', const: v, title } : { type: 'string', const: v })), enum: values.map(([v]) => v) };
  }
  // A pattern the browser would enforce (the attribute's "v"-flag syntax), else none.
  function validPattern(p) {
    try {
      new RegExp(p, 'v');
      return true;
    } catch {
      return false;
    }
  }

  function propertyOf(controls) {
    const el = controls[0];
    const type = (el.type || '').toLowerCase();
    let p;
    if (el.localName === 'select') {
      const opts = [...el.options].filter((o) => !o.disabled).map((o) => [o.value, o.textContent.trim()]);
      const one = { type: 'string', ...choice(opts) };
      p = el.multiple ? { type: 'array', items: one, uniqueItems: true } : one;
    } else if (type === 'checkbox' && controls.length === 1) {
      p = { type: 'boolean' };
    } else if (type === 'radio' || type === 'checkbox') {
      const one = { type: 'string', ...choice(controls.map((c) => [c.value, labelOf(c)])) };
      p = type === 'checkbox' ? { type: 'array', items: one, uniqueItems: true } : one;
    } else if (type === 'number' || type === 'range') {
      p = { type: 'number' };
      const min = numberAttr(el, 'min');
      const max = numberAttr(el, 'max');
      if (min !== undefined) p.minimum = min;
      if (max !== undefined) p.maximum = max;
      const step = el.getAttribute('step');
      if (step !== 'any') p.multipleOf = numberAttr(el, 'step') ?? 1;
    } else if (type === 'date') {
      p = { type: 'string', format: 'date' };
    } else {
      p = { type: 'string' };
      const pattern = el.getAttribute('pattern');
      if (pattern && validPattern(pattern)) p.pattern = pattern;
    }
    // A radio group's labels title its options; other controls are described by
    // their toolparamdescription, else their label.
    let desc = el.getAttribute('toolparamdescription') || (type === 'radio' || (type === 'checkbox' && controls.length > 1) ? '' : labelOf(el));
    if (type === 'date') {
      const note = "Dates MUST be provided in 'YYYY-MM-DD' format.";
      desc = desc ? `${desc} (${note})` : note;
    }
    if (desc) p.description = desc;
    return p;
  }

  function formSchema(form) {
    const properties = {};
    const required = [];
    for (const [name, controls] of controlsOf(form)) {
      properties[name] = propertyOf(controls);
      if (controls.some((c) => c.required)) required.push(name);
    }
    return { type: 'object', properties, required };
  }

  function setValue(el, value) {
    const proto = Object.getPrototypeOf(el);
    const setter = Object.getOwnPropertyDescriptor(proto, 'value')?.set;
    if (setter) setter.call(el, value); else el.value = value;
  }
  function fire(el) {
    el.dispatchEvent(new win.Event('input', { bubbles: true }));
    el.dispatchEvent(new win.Event('change', { bubbles: true }));
  }

  function fill(form, input) {
    const groups = controlsOf(form);
    for (const [name, value] of Object.entries(input ?? {})) {
      const controls = groups.get(name);
      if (!controls) continue;
      const el = controls[0];
      const type = (el.type || '').toLowerCase();
      if (el.localName === 'select') {
        const want = new Set((Array.isArray(value) ? value : [value]).map(String));
        for (const o of el.options) o.selected = want.has(o.value);
      } else if (type === 'checkbox' && controls.length === 1) {
        el.checked = Boolean(value);
      } else if (type === 'radio' || type === 'checkbox') {
        const want = new Set((Array.isArray(value) ? value : [value]).map(String));
        for (const c of controls) c.checked = want.has(c.value);
      } else {
        setValue(el, value === null || value === undefined ? '' : String(value));
      }
      for (const c of controls) fire(c);
    }
  }

  function submitterOf(form) {
    return form.querySelector('button:not([type]), button[type=submit], input[type=submit], input[type=image]');
  }

  // Fills the form as the agent asked and waits for its submission: at once with
  // toolautosubmit, else when the person submits it. The result is what the page
  // gave respondWith, or null when the form navigated away.
  function runForm(e, input) {
    const form = e.form;
    fill(form, input);
    const activated = new win.Event('toolactivated');
    Object.defineProperty(activated, 'toolName', { value: e.name, enumerable: true });
    context?.dispatchEvent(activated);
    return new Promise((resolve, reject) => {
      const onSubmit = (ev) => {
        if (ev.target !== form) return;
        win.removeEventListener('submit', onSubmit, true);
        agentEvents.add(ev);
        later(() => {
          const r = responses.get(ev);
          if (r) r.then(resolve, (err) => reject(unknownError(String(err?.message ?? err))));
          else if (ev.defaultPrevented) reject(unknownError("The site has a programming error: it called preventDefault() on the 'submit' event without also calling respondWith() with the tool result"));
          else resolve(null);
        });
      };
      win.addEventListener('submit', onSubmit, true);
      if (form.hasAttribute('toolautosubmit')) {
        const invalid = [...form.elements].filter((c) => c.willValidate && !c.checkValidity());
        if (invalid.length) {
          win.removeEventListener('submit', onSubmit, true);
          reject(unknownError(`Form validation failed: ${invalid.map((c) => `${c.name}: ${c.validationMessage}`).join('; ')}`));
          return;
        }
        form.requestSubmit(submitterOf(form) ?? undefined);
      } else {
        submitterOf(form)?.focus();
      }
    });
  }

  const forms = new Map(); // form → its entry
  function formsNow() {
    const out = [];
    for (const form of doc.querySelectorAll('form[toolname]')) {
      const name = (form.getAttribute('toolname') ?? '').trim();
      const description = (form.getAttribute('tooldescription') ?? '').trim();
      if (NAME.test(name) && description) out.push({ form, name, description, schema: JSON.stringify(formSchema(form)) });
    }
    return out;
  }
  let scanQueued = false;
  function scan() {
    scanQueued = false;
    let any = false;
    const seen = new Set();
    for (const f of formsNow()) {
      seen.add(f.form);
      const old = forms.get(f.form);
      if (old && old.name === f.name && old.description === f.description && old.schema === f.schema && tools.get(f.name) === old) continue;
      if (old && tools.get(old.name) === old) tools.delete(old.name);
      if (tools.has(f.name)) continue; // the name is taken (imperatively, or by another form)
      const entry = { name: f.name, description: f.description, schema: f.schema, form: f.form, execute: null };
      forms.set(f.form, entry);
      tools.set(f.name, entry);
      any = true;
    }
    for (const [form, entry] of forms) {
      if (seen.has(form)) continue;
      forms.delete(form);
      if (tools.get(entry.name) === entry) {
        tools.delete(entry.name);
        any = true;
      }
    }
    if (any) changed();
  }
  function queueScan() {
    if (scanQueued) return;
    scanQueued = true;
    queueMicrotask(scan);
  }
  function watchForms() {
    const start = () => {
      scan();
      new win.MutationObserver(queueScan).observe(doc.documentElement, {
        childList: true, subtree: true, attributes: true,
        attributeFilter: ['toolname', 'tooldescription', 'toolautosubmit', 'toolparamdescription', 'name', 'required', 'min', 'max', 'step', 'pattern', 'type', 'disabled', 'value', 'multiple'],
      });
    };
    if (doc.documentElement) {
      if (doc.readyState === 'loading') doc.addEventListener('DOMContentLoaded', start, { once: true });
      else start();
    }
  }

  // ---- installing the shim ----
  function install() {
    function ModelContext() {
      throw new TypeError('Illegal constructor');
    }
    class Impl extends win.EventTarget {}
    const proto = Impl.prototype;
    const handlers = new Map();
    function handlerAttr(type) {
      return {
        configurable: true, enumerable: true,
        get() { return handlers.get(type)?.fn ?? null; },
        set(fn) {
          const old = handlers.get(type);
          if (old) this.removeEventListener(type, old.listener);
          if (typeof fn !== 'function') { handlers.delete(type); return; }
          const listener = (ev) => fn.call(this, ev);
          handlers.set(type, { fn, listener });
          this.addEventListener(type, listener);
        },
      };
    }
    const method = (fn) => ({ configurable: true, enumerable: true, writable: true, value: fn });
    Object.defineProperties(proto, {
      registerTool: method(function registerTool(tool, options = {}) { return registerToolOn(this, tool, options); }),
      getTools: method(async function getTools() { return [...tools.values()].map(registered).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)); }),
      executeTool: method(function executeTool_(tool, input, options) { return executeTool(tool, input, options); }),
      ontoolchange: handlerAttr('toolchange'),
      ontoolactivated: handlerAttr('toolactivated'),
      ontoolcancel: handlerAttr('toolcancel'),
      constructor: { configurable: true, writable: true, value: ModelContext },
      [Symbol.toStringTag]: { configurable: true, value: 'ModelContext' },
    });
    Object.defineProperty(ModelContext, 'prototype', { value: proto, writable: false });
    Object.setPrototypeOf(ModelContext, win.EventTarget);
    function registerToolOn(self, tool, options) {
      if (self !== context) return Promise.reject(new TypeError('Illegal invocation'));
      return registerTool(tool, options);
    }
    context = new Impl();
    if (!Object.prototype.hasOwnProperty.call(win, 'ModelContext')) {
      Object.defineProperty(win, 'ModelContext', { configurable: true, writable: true, enumerable: false, value: ModelContext });
    }
    Object.defineProperty(DocumentProto, 'modelContext', {
      configurable: true, enumerable: true,
      get: function modelContext() { return this === doc ? context : undefined; },
    });
    // The name most code written before the draft moved it to Document uses.
    if (win.navigator && !('modelContext' in win.navigator)) {
      Object.defineProperty(win.navigator, 'modelContext', { configurable: true, enumerable: true, get: () => context });
    }
    const submit = win.SubmitEvent?.prototype;
    if (submit && !('agentInvoked' in submit)) {
      Object.defineProperty(submit, 'agentInvoked', { configurable: true, enumerable: true, get() { return agentEvents.has(this); } });
    }
    if (submit && !('respondWith' in submit)) {
      Object.defineProperty(submit, 'respondWith', {
        configurable: true, enumerable: true, writable: true,
        value: function respondWith(agentResponse) {
          if (!agentEvents.has(this)) throw invalidState('respondWith() is only for a submission an agent made (agentInvoked)');
          if (!this.defaultPrevented) throw invalidState('call preventDefault() before respondWith()');
          responses.set(this, Promise.resolve(agentResponse));
        },
      });
    }
    watchForms();
    return shimSource();
  }

  // A native ModelContext is the browser's own getter on Document.prototype, there
  // before any script of the page ran.
  function nativeContext() {
    try {
      const d = DocumentProto && Object.getOwnPropertyDescriptor(DocumentProto, 'modelContext');
      const mc = d?.get ? d.get.call(doc) : undefined;
      return mc && typeof mc.getTools === 'function' && typeof mc.executeTool === 'function' ? mc : null;
    } catch {
      return null;
    }
  }

  let source = null;
  function start() {
    if (source) return source;
    const mc = nativeContext();
    source = mc ? nativeSource(mc) : install();
    return source;
  }

  Object.defineProperty(win, KEY, { value: start, configurable: true, enumerable: false });
})(globalThis);
