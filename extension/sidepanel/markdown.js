// A small Markdown parser for the model's answers. It returns a tree of plain
// objects ({type, children, text, href, …}); render-markdown.js turns that tree
// into DOM nodes with createElement and textContent only. Raw HTML is never
// interpreted: "<script>" is text like any other. Links keep only http(s)
// addresses; anything else (javascript:, data:, relative) stays text.
//
// Blocks: ATX headings, fenced code, block quotes, lists (one level, ordered
// or not), horizontal rules, paragraphs. Inline: `code`, **strong**, *em* /
// _em_, ~~del~~, [text](url), bare http(s) URLs, hard line breaks.

/** The address if it is an absolute http(s) URL, else null. */
export function safeHref(raw) {
  if (typeof raw !== 'string') return null;
  const text = raw.trim();
  if (!/^https?:\/\//i.test(text)) return null;
  try {
    const url = new URL(text);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    return url.href;
  } catch {
    return null;
  }
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const HR = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const BULLET = /^ {0,3}[-*+]\s+(.*)$/;
const ORDERED = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/;

export function parseMarkdown(source) {
  const lines = String(source ?? '').replace(/\r\n?/g, '\n').split('\n');
  return { type: 'root', children: parseBlocks(lines) };
}

function parseBlocks(lines) {
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === '') {
      i++;
      continue;
    }
    let m = line.match(FENCE);
    if (m) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
      i++; // the closing fence (or the end: an unclosed fence runs to the end)
      blocks.push({ type: 'code_block', lang: m[2] || '', text: body.join('\n') });
      continue;
    }
    m = line.match(HEADING);
    if (m) {
      blocks.push({ type: 'heading', level: m[1].length, children: parseInline(m[2]) });
      i++;
      continue;
    }
    if (HR.test(line)) {
      blocks.push({ type: 'hr' });
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && QUOTE.test(lines[i])) body.push(lines[i++].match(QUOTE)[1]);
      blocks.push({ type: 'blockquote', children: parseBlocks(body) });
      continue;
    }
    const bullet = BULLET.test(line);
    if (bullet || ORDERED.test(line)) {
      const re = bullet ? BULLET : ORDERED;
      const items = [];
      const start = bullet ? 1 : Number(line.match(ORDERED)[1]);
      while (i < lines.length && re.test(lines[i])) {
        const m2 = lines[i].match(re);
        const text = [bullet ? m2[1] : m2[2]];
        i++;
        // Continuation lines: indented, not a new item, not blank.
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !re.test(lines[i])) text.push(lines[i++].trim());
        items.push({ type: 'list_item', children: parseInline(text.join('\n')) });
      }
      blocks.push(bullet ? { type: 'list', ordered: false, children: items } : { type: 'list', ordered: true, start, children: items });
      continue;
    }
    const para = [];
    while (
      i < lines.length && lines[i].trim() !== '' && !FENCE.test(lines[i]) && !HEADING.test(lines[i]) &&
      !HR.test(lines[i]) && !QUOTE.test(lines[i]) && !BULLET.test(lines[i]) && !ORDERED.test(lines[i])
    ) {
      para.push(lines[i++]);
    }
    blocks.push({ type: 'paragraph', children: parseInline(para.join('\n')) });
  }
  return blocks;
}

const text = (t) => ({ type: 'text', text: t });

/** Merges adjacent text nodes so the tree stays small. */
function pushText(out, t) {
  if (t === '') return;
  const last = out.at(-1);
  if (last?.type === 'text') last.text += t;
  else out.push(text(t));
}

const URL_RE = /^https?:\/\/[^\s<>"'`]+/i;

export function parseInline(source) {
  const s = String(source ?? '');
  const out = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    const rest = s.slice(i);
    if (c === '\\' && i + 1 < s.length && /[\\`*_{}[\]()#+\-.!~<>|]/.test(s[i + 1])) {
      pushText(out, s[i + 1]);
      i += 2;
      continue;
    }
    if (c === '\n') {
      out.push({ type: 'break' });
      i++;
      continue;
    }
    if (c === '`') {
      const ticks = rest.match(/^`+/)[0];
      const end = s.indexOf(ticks, i + ticks.length);
      if (end > 0) {
        out.push({ type: 'code', text: s.slice(i + ticks.length, end).replace(/^ (.*) $/, '$1') });
        i = end + ticks.length;
        continue;
      }
      pushText(out, ticks);
      i += ticks.length;
      continue;
    }
    let m = rest.match(/^(\*\*|__)(?=\S)([\s\S]*?\S)\1/);
    if (m) {
      out.push({ type: 'strong', children: parseInline(m[2]) });
      i += m[0].length;
      continue;
    }
    m = rest.match(/^~~(?=\S)([\s\S]*?\S)~~/);
    if (m) {
      out.push({ type: 'del', children: parseInline(m[1]) });
      i += m[0].length;
      continue;
    }
    m = rest.match(/^([*_])(?=\S)([\s\S]*?\S)\1/);
    // _ inside words (snake_case) is not emphasis.
    if (m && !(m[1] === '_' && /\w/.test(s[i - 1] ?? ''))) {
      out.push({ type: 'em', children: parseInline(m[2]) });
      i += m[0].length;
      continue;
    }
    if (c === '[') {
      const link = matchLink(s, i);
      if (link) {
        const href = safeHref(link.url);
        if (href) out.push({ type: 'link', href, children: parseInline(link.label) });
        else pushText(out, link.label === link.url ? link.label : `${link.label} (${link.url})`);
        i = link.end;
        continue;
      }
    }
    if ((c === 'h' || c === 'H') && (i === 0 || /[\s(]/.test(s[i - 1]))) {
      m = rest.match(URL_RE);
      if (m) {
        // Trailing punctuation belongs to the sentence, not the address.
        const url = m[0].replace(/[.,;:!?)\]]+$/, '');
        const href = safeHref(url);
        if (href) {
          out.push({ type: 'link', href, children: [text(url)] });
          i += url.length;
          continue;
        }
      }
    }
    pushText(out, c);
    i++;
  }
  return out;
}

/** [label](url) starting at i, with balanced brackets; null when it is not one. */
function matchLink(s, i) {
  let depth = 0;
  let j = i;
  for (; j < s.length; j++) {
    if (s[j] === '\\') {
      j++;
      continue;
    }
    if (s[j] === '[') depth++;
    else if (s[j] === ']' && --depth === 0) break;
  }
  if (j >= s.length || s[j + 1] !== '(') return null;
  const close = s.indexOf(')', j + 2);
  if (close < 0) return null;
  const inner = s.slice(j + 2, close).trim();
  const url = inner.replace(/\s+"[^"]*"$/, '').replace(/^<(.*)>$/, '$1');
  return { label: s.slice(i + 1, j), url, end: close + 1 };
}

/** Flattens a tree to its text, for tests and for copying. */
export function treeText(node) {
  if (node.type === 'text' || node.type === 'code' || node.type === 'code_block') return node.text;
  if (node.type === 'break') return '\n';
  return (node.children ?? []).map(treeText).join('');
}
