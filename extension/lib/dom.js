// The extension pages' DOM helpers (side panel, options page). Host and page
// text only ever becomes text: `text` sets textContent, and nothing here
// writes HTML.

/** The element with that id. */
export const byId = (id) => document.getElementById(id);

/**
 * A new element: props.text is its text, className, dataset, role, for and
 * aria* (ariaLabel → aria-label) are attributes, anything else a property;
 * undefined, null and false props and children are left out.
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') node.textContent = v;
    else if (k === 'className') node.className = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k.startsWith('aria') || k === 'role' || k === 'for') node.setAttribute(k === 'for' ? 'for' : k.replace(/^aria([A-Z])/, (_, c) => `aria-${c.toLowerCase()}`), v);
    else node[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) node.append(c);
  return node;
}

/** A type=button button that calls onClick; label, when given, is its accessible name. */
export function button(text, onClick, { className = 'quiet small', label } = {}) {
  const b = el('button', { type: 'button', className, text, ariaLabel: label });
  b.addEventListener('click', onClick);
  return b;
}

/** The nodes of a list of fix-it steps ({text, command?, detail?}: status-view's helpSteps). */
export function stepNodes(steps) {
  const parts = [];
  for (const step of steps) {
    parts.push(el('p', { text: step.text }));
    if (step.command) parts.push(el('pre', {}, el('code', { text: step.command })));
    if (step.detail) parts.push(el('p', { className: 'detail', text: step.detail }));
  }
  return parts;
}
