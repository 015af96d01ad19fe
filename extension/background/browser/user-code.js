// runUserCode runs the agent's code and returns its value made JSON-safe. It is
// injected as is: with chrome.scripting.executeScript({world: 'MAIN', func})
// into pages, and as source text into the sandbox's worker. So it must stay
// self-contained: no imports, no names from outside its own body.
//
// The code is tried first as an expression (`document.title`), then as the
// body of an async function (`const a = 1; return a + 1`); either way a
// returned promise is awaited. Never throws: the outcome is
// {ok: true, value, type} or {ok: false, message, stack, name}.
//
// guard.origin, in a page, is the origin the script was approved for: in any
// other document nothing runs ({ok: false, changed: true, origin}). Chrome may
// run a script aimed at one document in the one that replaced it, so this last
// check is made where the script runs; location cannot be redefined by a page.

export const DEFAULT_LIMITS = Object.freeze({ maxDepth: 10, maxBytes: 1 << 20, maxItems: 1000, maxString: 100_000 });

export async function runUserCode(code, limits, guard) {
  if (guard && guard.origin && globalThis.location && globalThis.location.origin !== guard.origin) {
    return { ok: false, changed: true, origin: String(globalThis.location.origin) };
  }
  const { maxDepth = 10, maxBytes = 1 << 20, maxItems = 1000, maxString = 100_000 } = limits || {};
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;

  function describeNode(node) {
    if (node.nodeType === 1) {
      let s = node.tagName.toLowerCase();
      if (node.id) s += `#${node.id}`;
      if (typeof node.className === 'string' && node.className.trim()) s += `.${node.className.trim().split(/\s+/).slice(0, 3).join('.')}`;
      const text = (node.textContent || '').trim().replace(/\s+/g, ' ');
      return `[element ${s}${text ? ` "${text.length > 60 ? `${text.slice(0, 60)}…` : text}"` : ''}]`;
    }
    if (node.nodeType === 3) return `[text "${(node.textContent || '').slice(0, 60)}"]`;
    if (node.nodeType === 9) return `[document ${node.URL || ''}]`;
    return `[node ${node.nodeName}]`;
  }

  function typeOf(v) {
    if (v === null) return 'null';
    if (Array.isArray(v)) return 'array';
    if (typeof Node === 'function' && v instanceof Node) return 'node';
    return typeof v;
  }

  // Depth-first copy with a budget of serialized bytes (approximate: string
  // lengths plus punctuation), cycles and limits marked in the value itself.
  let budget = maxBytes;
  let truncated = false;
  const stack = new Set();
  function safe(v, depth) {
    if (budget <= 0) {
      truncated = true;
      return '[Truncated]';
    }
    switch (typeof v) {
      case 'undefined':
        budget -= 9;
        return null;
      case 'boolean':
        budget -= 5;
        return v;
      case 'number':
        budget -= 8;
        return Number.isFinite(v) ? v : String(v);
      case 'bigint':
        budget -= 8;
        return `${v}n`;
      case 'string': {
        let s = v;
        if (s.length > maxString) {
          s = `${s.slice(0, maxString)}…[${v.length - maxString} more characters]`;
          truncated = true;
        }
        if (s.length > budget) {
          s = `${s.slice(0, Math.max(0, budget))}…[Truncated]`;
          truncated = true;
        }
        budget -= s.length + 2;
        return s;
      }
      case 'symbol':
        budget -= 10;
        return `[Symbol ${v.description ?? ''}]`;
      case 'function':
        budget -= 20;
        return `[Function ${v.name || 'anonymous'}]`;
      default:
        break;
    }
    if (v === null) {
      budget -= 4;
      return null;
    }
    if (typeof Node === 'function' && v instanceof Node) {
      const d = describeNode(v);
      budget -= d.length;
      return d;
    }
    if (typeof Window === 'function' && v instanceof Window) return '[Window]';
    if (stack.has(v)) {
      budget -= 12;
      return '[Circular]';
    }
    if (depth >= maxDepth) {
      truncated = true;
      budget -= 10;
      return Array.isArray(v) ? '[Array]' : '[Object]';
    }
    if (v instanceof Error) {
      return safe({ name: v.name, message: v.message, stack: v.stack }, depth);
    }
    if (v instanceof Date) return Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString();
    if (v instanceof RegExp) return String(v);
    stack.add(v);
    try {
      if (typeof v.toJSON === 'function' && !(v instanceof Map) && !(v instanceof Set)) {
        try {
          const j = v.toJSON();
          if (j !== v) return safe(j, depth);
        } catch {
          // fall through to a plain copy
        }
      }
      let list = null;
      if (Array.isArray(v) || ArrayBuffer.isView(v)) list = v;
      else if (v instanceof Set) list = [...v];
      else if (typeof NodeList === 'function' && (v instanceof NodeList || v instanceof HTMLCollection)) list = [...v];
      if (list) {
        const out = [];
        budget -= 2;
        const n = Math.min(list.length, maxItems);
        for (let i = 0; i < n && budget > 0; i++) out.push(safe(list[i], depth + 1));
        if (out.length < list.length) {
          truncated = true;
          out.push(`[${list.length - out.length} more items]`);
        }
        return out;
      }
      const out = {};
      budget -= 2;
      const entries = v instanceof Map ? [...v.entries()].map(([k, val]) => [String(k), val]) : Object.keys(v).map((k) => [k, undefined]);
      let count = 0;
      for (const [key, mapped] of entries) {
        if (budget <= 0 || count >= maxItems) {
          truncated = true;
          out['…'] = `[${entries.length - count} more keys]`;
          break;
        }
        let val = mapped;
        if (!(v instanceof Map)) {
          try {
            val = v[key];
          } catch (err) {
            val = `[Thrown: ${err && err.message}]`;
          }
        }
        budget -= key.length + 3;
        out[key] = safe(val, depth + 1);
        count++;
      }
      return out;
    } finally {
      stack.delete(v);
    }
  }

  let fn;
  try {
    try {
      fn = new AsyncFunction(`return (${code}\n);`);
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      fn = new AsyncFunction(code);
    }
  } catch (err) {
    return { ok: false, name: String(err && err.name), message: String(err && err.message), stack: String((err && err.stack) || '') };
  }
  let value;
  try {
    value = await fn();
  } catch (err) {
    const isError = err instanceof Error || (err && typeof err.message === 'string');
    return {
      ok: false,
      name: isError ? String(err.name) : 'thrown value',
      message: isError ? String(err.message) : String(JSON.stringify(safe(err, 0))),
      stack: isError ? String(err.stack || '') : '',
    };
  }
  const type = typeOf(value);
  const out = safe(value, 0);
  return { ok: true, value: out, type, truncated };
}
