// The model's Markdown becomes a tree of known node types and then DOM nodes
// made with createElement / createTextNode only: markup in the text stays text.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseInline, parseMarkdown, safeHref, treeText } from '../sidepanel/markdown.js';
import { renderMarkdown } from '../sidepanel/render-markdown.js';

const TYPES = new Set(['root', 'paragraph', 'heading', 'code_block', 'blockquote', 'list', 'list_item', 'hr', 'text', 'code', 'strong', 'em', 'del', 'link', 'break']);

function walk(node, fn) {
  fn(node);
  for (const c of node.children ?? []) walk(c, fn);
}

/** Just enough of a document to see what the renderer builds. */
function fakeDocument() {
  const created = [];
  const node = (props) => ({
    ...props,
    children: [],
    append(...kids) { this.children.push(...kids); },
  });
  return {
    created,
    createElement(tag) {
      const el = node({ tagName: tag.toUpperCase() });
      created.push(el);
      return el;
    },
    createTextNode(text) { return node({ nodeType: 3, text }); },
    createDocumentFragment() { return node({ fragment: true }); },
  };
}

const textOf = (n) => (n.nodeType === 3 ? n.text : n.textContent ?? n.children.map(textOf).join(''));

describe('markdown parser', () => {
  it('parses the common blocks and inlines', () => {
    const tree = parseMarkdown('# Title\n\nSome **bold** and *em* and `code` and ~~old~~.\n\n- one\n- two\n\n1. first\n2. second\n\n> quoted\n\n```js\nlet x = 1;\n```\n\n---');
    assert.deepEqual(tree.children.map((b) => b.type), ['heading', 'paragraph', 'list', 'list', 'blockquote', 'code_block', 'hr']);
    assert.deepEqual(tree.children[1].children.map((n) => n.type), ['text', 'strong', 'text', 'em', 'text', 'code', 'text', 'del', 'text']);
    assert.equal(tree.children[2].ordered, false);
    assert.equal(tree.children[3].ordered, true);
    assert.equal(tree.children[5].lang, 'js');
    assert.equal(tree.children[5].text, 'let x = 1;');
  });

  it('keeps snake_case words as text', () => {
    assert.deepEqual(parseInline('call get_tab_content now'), [{ type: 'text', text: 'call get_tab_content now' }]);
  });

  it('links http(s) only, with the label kept', () => {
    const [link] = parseInline('[docs](https://example.com/a?b=1)');
    assert.deepEqual(link, { type: 'link', href: 'https://example.com/a?b=1', children: [{ type: 'text', text: 'docs' }] });
    const bare = parseInline('see https://example.com/x.');
    assert.equal(bare[1].type, 'link');
    assert.equal(bare[1].href, 'https://example.com/x');
    assert.equal(bare[2].text, '.');
  });

  for (const [name, source] of [
    ['a script tag', '<script>alert(1)</script>'],
    ['an img with onerror', '<img src=x onerror="alert(1)">'],
    ['an inline handler in a tag', '<a href="https://x.example" onclick="alert(1)">x</a>'],
    ['an iframe', '<iframe src="javascript:alert(1)"></iframe>'],
  ]) {
    it(`keeps ${name} as text`, () => {
      const tree = parseMarkdown(source);
      walk(tree, (n) => assert.ok(TYPES.has(n.type), n.type));
      assert.equal(treeText(tree), source);
      const doc = fakeDocument();
      const frag = renderMarkdown(doc, source);
      assert.deepEqual(doc.created.map((e) => e.tagName), ['P']);
      assert.equal(textOf(frag), source);
    });
  }

  for (const href of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', ' javascript:alert(1)', 'data:text/html,<script>alert(1)</script>', 'vbscript:x', '/relative', 'file:///etc/passwd']) {
    it(`refuses the link ${JSON.stringify(href)}`, () => {
      assert.equal(safeHref(href), null);
      const tree = parseMarkdown(`[click me](${href})`);
      walk(tree, (n) => assert.notEqual(n.type, 'link'));
      const doc = fakeDocument();
      renderMarkdown(doc, `[click me](${href})`);
      assert.ok(doc.created.every((e) => e.tagName !== 'A'));
    });
  }

  it('renders links with rel=noopener noreferrer and a new tab', () => {
    const doc = fakeDocument();
    renderMarkdown(doc, '[a](https://example.com/)');
    const a = doc.created.find((e) => e.tagName === 'A');
    assert.equal(a.href, 'https://example.com/');
    assert.equal(a.rel, 'noopener noreferrer');
    assert.equal(a.target, '_blank');
  });

  it('does not let a link label smuggle markup', () => {
    const tree = parseMarkdown('[<b onmouseover=alert(1)>x</b>](https://example.com)');
    const link = tree.children[0].children[0];
    assert.equal(link.type, 'link');
    assert.equal(treeText(link), '<b onmouseover=alert(1)>x</b>');
  });

  it('renders code blocks as text, whatever they hold', () => {
    const doc = fakeDocument();
    const frag = renderMarkdown(doc, '```html\n<script>alert(1)</script>\n```');
    assert.deepEqual(doc.created.map((e) => e.tagName), ['PRE', 'CODE']);
    assert.equal(frag.children[0].children[0].textContent, '<script>alert(1)</script>');
  });

  it('caps heading levels below the panel\'s own', () => {
    const doc = fakeDocument();
    renderMarkdown(doc, '# big\n###### small');
    assert.deepEqual(doc.created.map((e) => e.tagName), ['H3', 'H6']);
  });

  it('survives an unclosed fence and stray markers', () => {
    const tree = parseMarkdown('```\nstill streaming');
    assert.equal(tree.children[0].type, 'code_block');
    assert.equal(treeText(parseMarkdown('**not closed and `tick')), '**not closed and `tick');
  });
});
