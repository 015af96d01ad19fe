// Turns the tree of markdown.js into DOM nodes. Only createElement,
// createTextNode and a fixed table of tags: no string of the model's ever
// becomes markup, an attribute name or an event handler.

import { parseMarkdown, safeHref } from './markdown.js';

const TAGS = {
  paragraph: 'p', blockquote: 'blockquote', list_item: 'li', strong: 'strong', em: 'em', del: 'del', hr: 'hr', break: 'br',
};

export function renderNode(doc, node) {
  switch (node.type) {
    case 'text':
      return doc.createTextNode(node.text);
    case 'code': {
      const el = doc.createElement('code');
      el.textContent = node.text;
      return el;
    }
    case 'code_block': {
      const pre = doc.createElement('pre');
      const code = doc.createElement('code');
      code.textContent = node.text;
      pre.append(code);
      return pre;
    }
    case 'heading': {
      // h1/h2 of an answer would outrank the panel's own headings.
      const el = doc.createElement(`h${Math.min(6, Math.max(3, node.level + 2))}`);
      appendChildren(doc, el, node.children);
      return el;
    }
    case 'list': {
      const el = doc.createElement(node.ordered ? 'ol' : 'ul');
      if (node.ordered && Number.isInteger(node.start) && node.start !== 1) el.start = node.start;
      appendChildren(doc, el, node.children);
      return el;
    }
    case 'link': {
      const href = safeHref(node.href);
      if (!href) {
        const span = doc.createElement('span');
        appendChildren(doc, span, node.children);
        return span;
      }
      const a = doc.createElement('a');
      a.href = href;
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
      appendChildren(doc, a, node.children);
      return a;
    }
    default: {
      const tag = Object.hasOwn(TAGS, node.type) ? TAGS[node.type] : 'span';
      const el = doc.createElement(tag);
      appendChildren(doc, el, node.children);
      return el;
    }
  }
}

function appendChildren(doc, el, children) {
  for (const child of children ?? []) el.append(renderNode(doc, child));
}

/** A fragment of the rendered Markdown. */
export function renderMarkdown(doc, source) {
  const frag = doc.createDocumentFragment();
  appendChildren(doc, frag, parseMarkdown(source).children);
  return frag;
}
