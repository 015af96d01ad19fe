// What a page sees of WebMCP, written by the test pages of this folder (not by any
// library): its tools as getTools() lists them, what it logged, what went wrong.
// The end-to-end test compares this view with and without Ferry.
window.__view = { log: [], errors: [] };
window.__say = (...parts) => window.__view.log.push(parts.map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join(' '));
addEventListener('error', (e) => window.__view.errors.push(String(e.message)));
addEventListener('unhandledrejection', (e) => window.__view.errors.push(`unhandled rejection: ${e.reason?.name ?? ''} ${e.reason?.message ?? e.reason}`));
for (const level of ['error', 'warn']) {
  const orig = console[level];
  console[level] = (...a) => { window.__view.log.push(`console.${level}: ${a.map((x) => (x instanceof Error ? `${x.name}: ${x.message}` : String(x))).join(' ')}`); return orig.apply(console, a); };
}
// Settles the view: the page's tools as getTools() gives them (what a page or an
// in-page agent reads), with the fields that carry meaning.
window.__finish = async ({ tools = true } = {}) => {
  const mc = document.modelContext;
  if (!tools) {
    window.__view.tools = 'not read';
  } else if (mc && typeof mc.getTools === 'function') {
    const tools = await mc.getTools();
    window.__view.tools = tools.map((t) => ({
      name: t.name, title: t.title ?? '', description: t.description,
      inputSchema: typeof t.inputSchema === 'string' ? JSON.parse(t.inputSchema) : t.inputSchema ?? null,
      readOnly: Boolean(t.annotations?.readOnlyHint), sameWindow: t.window === window, origin: t.origin,
    })).sort((a, b) => (a.name < b.name ? -1 : 1));
  } else {
    window.__view.tools = null;
  }
  window.__view.done = true;
};
