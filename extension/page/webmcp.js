// WebMCP for Ferry's page API (page/ferry-main.js), in the MAIN world at
// document_start, before the page's own scripts.
//
// Where the browser has its own document.modelContext (Chromium with WebMCP on),
// nothing here touches it: Ferry reads the page's tools with getTools(), runs them
// with executeTool() and follows toolchange, so the page keeps every native
// behaviour (its rejections, its declarative forms). Where there is none, this file
// installs a ModelContext that behaves as Chromium's own does (protocol/PAGES.md,
// "WebMCP as browsers ship it", says which spec commit and which browser it was held
// to): an EventTarget on Document.prototype.modelContext (navigator.modelContext as
// the older alias), refused while document.domain is enabled, registerTool returning
// a promise that rejects with the browser's own errors, unregistration by
// AbortSignal, getTools, executeTool, toolchange and toolactivated, and declarative
// forms (toolname, tooldescription, tooltitle, toolautosubmit, toolparamdescription;
// SubmitEvent.agentInvoked and respondWith) whose schemas are the browser's. A page
// that loads its own polyfill finds a modelContext and builds on it, as it would on
// a native one.
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
  // Taken now: a removed frame's window no longer has its constructors, and its
  // ModelContext must still refuse with the right exception.
  const DOMExceptionOf = win.DOMException;

  function unknownError(message) {
    return new DOMExceptionOf(message, 'UnknownError');
  }
  function invalidState(message) {
    return new DOMExceptionOf(message, 'InvalidStateError');
  }
  const later = (fn) => win.setTimeout(fn, 0);

  // The browsers refuse every method of the ModelContext to a document whose
  // document.domain setter still works (an origin that sends Origin-Agent-Cluster: ?0),
  // except on file: pages.
  const domainEnabled = () => win.originAgentCluster === false && win.location.protocol !== 'file:';
  const DOMAIN_ENABLED = 'document.modelContext cannot be used when document.domain is enabled.';
  // The spec's first refusal: a document that is no longer fully active (its frame
  // was removed) registers, lists and runs nothing.
  function refusal() {
    if (doc.defaultView === null) return new DOMExceptionOf('The document is not active.', 'InvalidStateError');
    if (domainEnabled()) return new DOMExceptionOf(DOMAIN_ENABLED, 'SecurityError');
    return null;
  }

  // executeTool's input has been an object since the spec changed it (Chromium 155);
  // the browsers before took the JSON text and refuse an object while they convert
  // it, before any tool runs. Only such a refusal earns the one retry with the text:
  // anything else may come from a tool that ran, and running it twice is the harm.
  function refusedInput(err) {
    const m = String(err?.message ?? '');
    return /failed to parse input/i.test(m) || (err?.name === 'TypeError' && m.startsWith("Failed to execute 'executeTool'"));
  }

  // ---- the native ModelContext, when the browser has one ----
  function nativeSource(mc) {
    let registered = new Map(); // name → the RegisteredTool getTools() gave
    return {
      kind: 'native',
      async list() {
        // The browser would only refuse: asking would put its refusal in the page's console.
        if (domainEnabled()) return [];
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
        const input = args ?? {};
        let out;
        try {
          out = await mc.executeTool(t, input);
        } catch (err) {
          if (!refusedInput(err)) throw new Error(err?.message ?? String(err));
          try {
            out = await mc.executeTool(t, JSON.stringify(input));
          } catch (again) {
            throw new Error(refusedInput(again) ? err?.message ?? String(err) : again?.message ?? String(again));
          }
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

  // The browser's words for a WebIDL conversion that failed, so that a page's catch
  // sees what it sees without Ferry.
  const REG = "Failed to execute 'registerTool' on 'ModelContext': ";
  const EXEC = "Failed to execute 'executeTool' on 'ModelContext': ";
  const isObject = (v) => v !== null && (typeof v === 'object' || typeof v === 'function');

  // Reads a ModelContextTool as WebIDL converts the dictionary: its members in
  // alphabetical order, each converted as it is read.
  function readTool(tool) {
    if (tool === null || (tool !== undefined && !isObject(tool))) throw new TypeError(`${REG}The provided value is not of type 'ModelContextTool'.`);
    const t = tool ?? {};
    const missing = (k) => new TypeError(`${REG}Failed to read the '${k}' property from 'ModelContextTool': Required member is undefined.`);
    let annotations;
    const a = t.annotations;
    if (a !== undefined) {
      if (a !== null && !isObject(a)) throw new TypeError(`${REG}Failed to read the 'annotations' property from 'ModelContextTool': The provided value is not of type 'ToolAnnotations'.`);
      const hint = (k) => Boolean(a?.[k]);
      annotations = { consequentialHint: hint('consequentialHint'), debugging: hint('debugging'), readOnlyHint: hint('readOnlyHint'), untrustedContentHint: hint('untrustedContentHint') };
    }
    if (t.description === undefined) throw missing('description');
    const description = String(t.description);
    // wu-framework's expose() hands `handler` where the spec says `execute`.
    const execute = t.execute !== undefined ? t.execute : t.handler;
    if (execute === undefined) throw missing('execute');
    if (typeof execute !== 'function') throw new TypeError(`${REG}Failed to read the 'execute' property from 'ModelContextTool': The given value is not a function.`);
    const inputSchema = t.inputSchema;
    if (inputSchema !== undefined && !isObject(inputSchema)) throw new TypeError(`${REG}Failed to read the 'inputSchema' property from 'ModelContextTool': Failed to convert value to 'object'.`);
    if (t.name === undefined) throw missing('name');
    const name = String(t.name);
    const title = t.title === undefined ? undefined : String(t.title);
    return { annotations, description, execute, inputSchema, name, title };
  }

  function registerTool(args, options) {
    let entry;
    try {
      if (args.length === 0) throw new TypeError(`${REG}1 argument required, but only 0 present.`);
      const t = readTool(args[0]);
      const refused = refusal();
      if (refused) throw refused;
      flushForms();
      if (tools.has(t.name)) throw invalidState('Duplicate tool name');
      if (!NAME.test(t.name)) throw invalidState('Invalid tool name');
      if (t.description === '') throw invalidState('Description is required');
      let schema;
      if (t.inputSchema !== undefined) {
        try {
          schema = JSON.stringify(t.inputSchema);
        } catch (err) {
          throw err instanceof TypeError ? new TypeError(REG + err.message) : err;
        }
        if (schema === undefined) throw new TypeError(`${REG}invalid input schema: toJSON() returns undefined`);
      }
      const signal = options?.signal;
      if (signal?.aborted) return Promise.reject(signal.reason);
      for (const o of options?.exposedTo ?? []) {
        let u;
        try {
          u = new URL(String(o));
        } catch {
          throw new DOMExceptionOf('Only secure origins are allowed in the exposedTo list.', 'SecurityError');
        }
        const local = u.hostname === 'localhost' || u.hostname === '127.0.0.1' || u.hostname === '[::1]' || u.hostname.endsWith('.localhost');
        if (u.protocol !== 'https:' && !(u.protocol === 'http:' && local) && u.protocol !== 'file:') {
          throw new DOMExceptionOf('Only secure origins are allowed in the exposedTo list.', 'SecurityError');
        }
      }
      entry = { name: t.name, title: t.title, description: t.description, schema, execute: t.execute, signal, annotations: t.annotations };
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

  // An imperative tool's execute receives the input and, as Chromium passes it, an
  // object holding the call's AbortSignal.
  async function runEntry(e, input, signal) {
    return e.form ? runForm(e, input) : e.execute.call(undefined, input, { signal: signal ?? new win.AbortController().signal });
  }

  // The input as the browser takes it: an object (undefined and null are {}), copied
  // through JSON, whose own errors are the browser's conversion errors.
  function inputObject(input) {
    if (input === undefined || input === null) return {};
    if (!isObject(input)) throw new TypeError(`${EXEC}invalid input object: value is not an object`);
    let text;
    try {
      text = JSON.stringify(input);
    } catch (err) {
      throw err instanceof TypeError ? new TypeError(EXEC + err.message) : err;
    }
    return text === undefined ? {} : JSON.parse(text);
  }

  function serialiseResult(v) {
    if (typeof v === 'string') return v;
    const s = JSON.stringify(v);
    return s === undefined ? 'undefined' : s;
  }

  let ToolActivatedEvent = win.ToolActivatedEvent;
  // The browser fires it in a task of its own, and settles executeTool after it.
  function activated(name) {
    return new Promise((resolve) => later(() => {
      try {
        context?.dispatchEvent(new ToolActivatedEvent('toolactivated', { toolName: name }));
      } finally {
        resolve();
      }
    }));
  }

  async function executeTool(tool, input, options) {
    if (!isObject(tool)) throw new TypeError(`${EXEC}The provided value is not of type 'RegisteredTool'.`);
    for (const k of ['description', 'name', 'origin', 'window']) {
      if (tool[k] === undefined) throw new TypeError(`${EXEC}Failed to read the '${k}' property from 'RegisteredTool': Required member is undefined.`);
    }
    const args = inputObject(input);
    const refused = refusal();
    if (refused) throw refused;
    const signal = options?.signal;
    if (signal?.aborted) throw signal.reason ?? new DOMExceptionOf('signal is aborted without reason', 'AbortError');
    flushForms();
    const e = tools.get(String(tool.name));
    if (!e || tool.window !== win || tool.origin !== win.location.origin) throw unknownError('The operation failed for an unknown transient reason (e.g. out of memory).');
    const ctl = new win.AbortController();
    signal?.addEventListener?.('abort', () => ctl.abort(signal.reason), { once: true });
    let result;
    try {
      const work = Promise.resolve().then(() => runEntry(e, args, ctl.signal));
      const fired = activated(e.name);
      work.catch(() => {});
      await fired;
      if (signal?.aborted) throw signal.reason;
      result = signal ? await Promise.race([work, new Promise((_, rej) => signal.addEventListener('abort', () => rej(signal.reason), { once: true }))]) : await work;
    } catch (err) {
      if (signal?.aborted && err === signal.reason) throw err;
      throw unknownError(e.form ? String(err?.message ?? err) : 'Tool was executed but the invocation failed. For example, the script function threw an error');
    }
    // A form that navigated answers null itself, not its JSON text.
    return e.form && result === null ? null : serialiseResult(result);
  }

  function shimSource() {
    return {
      kind: 'shim',
      async list() {
        if (domainEnabled()) return [];
        flushForms();
        return [...tools.values()].map((e) => ({
          name: e.name, title: e.title ?? '', description: e.description,
          inputSchema: e.schema === undefined ? undefined : JSON.parse(e.schema), annotations: e.annotations,
          form: Boolean(e.form),
        }));
      },
      async run(name, args) {
        const e = tools.get(name);
        if (!e) throw new Error(`the page no longer registers the WebMCP tool ${name}`);
        const work = runEntry(e, args ?? {});
        activated(e.name);
        return work;
      },
      onChange(fn) {
        listeners.add(fn);
      },
    };
  }

  // ---- declarative forms ----
  // What follows gives a form the schema Chromium's own WebMCP gives it, rule for
  // rule; tests/e2e/testdata/webmcp/forms.html holds the two side by side.
  const agentEvents = new WeakSet(); // SubmitEvents an agent caused
  const responses = new WeakMap(); // SubmitEvent → the promise given to respondWith

  // A control's labels as the browser's synthesis reads them: each label's text
  // without the text of the controls inside it (a select's options), trimmed at
  // its ends only, the labels joined by "; ".
  function labelOf(control) {
    const out = [];
    for (const l of control.labels ?? []) {
      const copy = l.cloneNode(true);
      for (const c of copy.querySelectorAll('select, textarea, button, datalist, output')) c.remove();
      const text = copy.textContent.trim();
      if (text) out.push(text);
    }
    return out.join('; ');
  }

  const typeOf = (el) => (el.localName === 'input' ? (el.type || 'text').toLowerCase() : el.localName);
  const grouped = (type) => type === 'radio' || type === 'checkbox';

  // The controls that become parameters, by name: those that take part in
  // validation (not disabled, not read-only), less buttons and file inputs. A name
  // two controls share is dropped unless they are one radio or checkbox group.
  function controlsOf(form) {
    const groups = new Map(); // name → [controls]
    for (const el of form.elements) {
      if (!el.willValidate || el.localName === 'button') continue;
      const type = typeOf(el);
      if (type === 'submit' || type === 'image' || type === 'file') continue;
      if (!groups.has(el.name)) groups.set(el.name, []);
      groups.get(el.name).push(el);
    }
    for (const [name, cs] of groups) {
      if (cs.length > 1 && !cs.every((c) => grouped(typeOf(c)) && typeOf(c) === typeOf(cs[0]))) groups.delete(name);
    }
    return groups;
  }

  function numberAttr(el, k) {
    const v = el.getAttribute(k);
    if (v === null || v.trim() === '') return undefined;
    const n = Number(v);
    return Number.isFinite(n) ? n : undefined;
  }

  // [value, title?] pairs; an undefined title is left out.
  function choice(values) {
    return { anyOf: values.map(([v, title]) => (title !== undefined ? { type: 'string', const: v, title } : { type: 'string', const: v })), enum: values.map(([v]) => v) };
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

  // The formats the browser gives the date and time inputs other than date, which
  // has the format "date" and a sentence in its description instead.
  const FORMATS = {
    time: '^([01][0-9]|2[0-3]):[0-5][0-9]$',
    'datetime-local': '^[0-9]{4}-(0[1-9]|1[0-2])-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]$',
    month: '^[0-9]{4}-(0[1-9]|1[0-2])$',
    week: '^[0-9]{4}-W(0[1-9]|[1-4][0-9]|5[0-3])$',
    color: '^#[0-9a-zA-Z]{6}$',
  };
  const DATE_NOTE = "Dates MUST be provided in 'YYYY-MM-DD' format.";

  // A number's bounds and step: a range has 0 and 100 unless it says otherwise (and
  // a maximum below the minimum is the minimum); the step is the attribute's when
  // it is a positive number, else 1, none for "any" (a range keeps 1). multipleOf is
  // said only when the minimum, the step's base, is a multiple of it: otherwise the
  // valid values are not multiples of anything JSON Schema can say.
  function numberSchema(el, range) {
    const p = { type: 'number' };
    let min = numberAttr(el, 'min');
    let max = numberAttr(el, 'max');
    if (range) {
      min ??= 0;
      max ??= 100;
      if (max < min) max = min;
    }
    if (min !== undefined) p.minimum = min;
    if (max !== undefined) p.maximum = max;
    const raw = (el.getAttribute('step') ?? '').trim();
    if (raw.toLowerCase() === 'any' && !range) return p;
    const n = numberAttr(el, 'step');
    const step = n !== undefined && n > 0 ? n : 1;
    const q = min === undefined ? 0 : min / step;
    if (Math.abs(q - Math.round(q)) < 1e-9) p.multipleOf = step;
    return p;
  }

  function propertyOf(controls) {
    const el = controls[0];
    const type = typeOf(el);
    let p;
    if (el.localName === 'select') {
      const one = { type: 'string', ...choice([...el.options].map((o) => [o.value, o.textContent])) };
      p = el.multiple ? { type: 'array', items: one, uniqueItems: true } : one;
    } else if (type === 'checkbox' && controls.length === 1) {
      p = { type: 'boolean' };
    } else if (grouped(type)) {
      const one = { type: 'string', ...choice(controls.map((c) => [c.value, labelOf(c) || undefined])) };
      p = type === 'checkbox' ? { type: 'array', items: one, uniqueItems: true } : one;
    } else if (type === 'number' || type === 'range') {
      p = numberSchema(el, type === 'range');
    } else if (type === 'date') {
      p = { type: 'string', format: 'date' };
    } else if (FORMATS[type]) {
      p = { type: 'string', format: FORMATS[type] };
    } else {
      p = { type: 'string' };
      const pattern = el.getAttribute('pattern');
      if (pattern && validPattern(pattern)) p.pattern = pattern;
    }
    // A group's labels title its options and nothing describes it; another control
    // is described by its toolparamdescription, else its labels, else its
    // aria-description.
    let desc = '';
    if (!(grouped(type) && !(type === 'checkbox' && controls.length === 1))) {
      desc = el.getAttribute('toolparamdescription') || labelOf(el) || el.getAttribute('aria-description') || '';
    }
    if (type === 'date') desc = desc ? `${desc} (${DATE_NOTE})` : DATE_NOTE;
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
    for (const name of Object.keys(input ?? {})) {
      if (!groups.has(name)) throw new Error(`Input contains a parameter "${name}" but there is no such parameter for the tool`);
    }
    for (const [name, value] of Object.entries(input ?? {})) {
      const controls = groups.get(name);
      const el = controls[0];
      const type = typeOf(el);
      if (el.localName === 'select') {
        const want = new Set((Array.isArray(value) ? value : [value]).map(String));
        for (const o of el.options) o.selected = want.has(o.value);
      } else if (type === 'checkbox' && controls.length === 1) {
        el.checked = Boolean(value);
      } else if (grouped(type)) {
        const want = new Set((Array.isArray(value) ? value : [value]).map(String));
        for (const c of controls) c.checked = want.has(c.value);
      } else {
        setValue(el, value === null || value === undefined ? '' : String(value));
      }
      for (const c of controls) fire(c);
    }
  }

  function submitterOf(form) {
    for (const el of form.elements) {
      if ((el.localName === 'button' && (el.type || 'submit') === 'submit') || (el.localName === 'input' && (el.type === 'submit' || el.type === 'image'))) return el;
    }
    return null;
  }

  // Fills the form as the agent asked and waits for its submission: at once with
  // toolautosubmit, else when the person submits it. The result is what the page
  // gave respondWith, or null when the form navigates away (the spec's answer for a
  // submission that leaves the document).
  function runForm(e, input) {
    const form = e.form;
    const auto = form.hasAttribute('toolautosubmit');
    const submitter = submitterOf(form);
    if (!auto && !submitter) throw new Error('No submit button was found, but for a form without `toolautosubmit`, there must be a submit button');
    fill(form, input);
    return new Promise((resolve, reject) => {
      let submitted = null; // the SubmitEvent, once it was dispatched
      // Read once the page's own listeners are done with the event: a submission
      // the page did not prevent is a navigation, and its answer is null at once,
      // while the document is still there to hear it.
      const settle = (ev) => {
        const r = responses.get(ev);
        if (r) r.then(resolve, (err) => reject(new Error(String(err?.message ?? err))));
        else if (ev.defaultPrevented) reject(new Error("The site has a programming error: it called preventDefault() on the 'submit' event, without also calling respondWith() with the tool result"));
        else resolve(null);
      };
      const onSubmit = (ev) => {
        if (ev.target !== form) return;
        win.removeEventListener('submit', onSubmit, true);
        agentEvents.add(ev);
        submitted = ev;
        if (!auto) later(() => settle(ev));
      };
      win.addEventListener('submit', onSubmit, true);
      if (auto) {
        const invalid = [...form.elements].filter((c) => c.willValidate && !c.checkValidity());
        if (invalid.length) {
          win.removeEventListener('submit', onSubmit, true);
          reject(new Error(`Form validation failed: ${invalid.map((c) => `${c.name}: ${c.validationMessage}`).join('; ')}`));
          return;
        }
        form.requestSubmit(submitter ?? undefined);
        if (submitted) settle(submitted);
        else win.removeEventListener('submit', onSubmit, true);
      } else {
        submitter.focus();
      }
    });
  }

  // A form is a tool when its toolname is a valid tool name as it stands (spaces
  // are not trimmed off, and a name with one is no tool) and it has a
  // tooldescription; the first form of a name wins.
  const forms = new Map(); // form → its entry
  function formsNow() {
    const out = [];
    for (const form of doc.querySelectorAll('form[toolname]')) {
      const name = form.getAttribute('toolname') ?? '';
      const description = form.getAttribute('tooldescription');
      const title = form.getAttribute('tooltitle') ?? undefined;
      if (NAME.test(name) && description) out.push({ form, name, description, title, schema: JSON.stringify(formSchema(form)) });
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
      if (old && old.name === f.name && old.description === f.description && old.title === f.title && old.schema === f.schema && tools.get(f.name) === old) continue;
      if (old && tools.get(old.name) === old) tools.delete(old.name);
      if (tools.has(f.name)) continue; // the name is taken (imperatively, or by another form)
      const entry = { name: f.name, title: f.title, description: f.description, schema: f.schema, form: f.form, execute: null };
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
  // The browser registers a form as the parser inserts it, so a script after the
  // form (a module script reading getTools()) finds its tool: the forms are watched
  // from document_start, and every method looks at what changed since the observer
  // last spoke before it answers.
  let observer = null;
  function flushForms() {
    if (!observer) return;
    if (observer.takeRecords().length > 0 || scanQueued) scan();
  }
  function watchForms() {
    observer = new win.MutationObserver(queueScan);
    observer.observe(doc, {
      childList: true, subtree: true, attributes: true,
      attributeFilter: ['toolname', 'tooldescription', 'tooltitle', 'toolautosubmit', 'toolparamdescription', 'name', 'required', 'min', 'max', 'step', 'pattern', 'type', 'disabled', 'readonly', 'value', 'multiple', 'for', 'form', 'id', 'label', 'aria-description'],
    });
    scan();
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
      registerTool: method(function registerTool(tool, options = {}) { return registerToolOn(this, arguments, options); }),
      getTools: method(async function getTools() {
        const refused = refusal();
        if (refused) throw refused;
        flushForms();
        return [...tools.values()].map(registered).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      }),
      executeTool: method(function executeTool_(tool, input, options) { return executeTool(tool, input, options); }),
      ontoolchange: handlerAttr('toolchange'),
      ontoolactivated: handlerAttr('toolactivated'),
      ontoolcancel: handlerAttr('toolcancel'),
      constructor: { configurable: true, writable: true, value: ModelContext },
      [Symbol.toStringTag]: { configurable: true, value: 'ModelContext' },
    });
    Object.defineProperty(ModelContext, 'prototype', { value: proto, writable: false });
    Object.setPrototypeOf(ModelContext, win.EventTarget);
    function registerToolOn(self, args, options) {
      if (self !== context) return Promise.reject(new TypeError('Illegal invocation'));
      return registerTool(args, options);
    }
    if (typeof ToolActivatedEvent !== 'function') {
      // The event the browser fires at the ModelContext when an agent invokes a tool.
      ToolActivatedEvent = class ToolActivatedEvent extends win.Event {
        #toolName;
        constructor(type, init = {}) {
          super(type, init);
          this.#toolName = String(init.toolName ?? '');
        }
        get toolName() { return this.#toolName; }
      };
      Object.defineProperty(win, 'ToolActivatedEvent', { configurable: true, writable: true, enumerable: false, value: ToolActivatedEvent });
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
