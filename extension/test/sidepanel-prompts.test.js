import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { cardKey, flowText, pageTitle, requesterText } from '../sidepanel/prompt-view.js';

const en = JSON.parse(readFileSync(new URL('../_locales/en/messages.json', import.meta.url), 'utf8'));
// chrome.i18n's substitution, enough for these messages.
const t = (key, subs = []) => {
  const m = en[key];
  assert.ok(m, `no message ${key}`);
  return m.message.replace(/\$([A-Z_]+)\$/g, (_, name) => subs[Number(m.placeholders[name.toLowerCase()].content.slice(1)) - 1]);
};

describe('confirmation cards', () => {
  it('name who asks', () => {
    const titles = { c1: 'Groceries' };
    const conversationTitle = (id) => titles[id] ?? '';
    assert.equal(requesterText({ kind: 'model', run_id: 'r1', conversation_id: 'c1' }, { conversationTitle }, t), 'Asked by the agent, in the conversation “Groceries”');
    assert.equal(requesterText({ kind: 'model', run_id: 'abcdef-0123456789', conversation_id: 'c9' }, { conversationTitle }, t), 'Asked by the agent (run …23456789)');
    assert.equal(requesterText({ kind: 'model' }, {}, t), 'Asked by the agent');
    assert.equal(requesterText({ kind: 'page', origin: 'https://shop.example' }, {}, t), 'Asked by the page https://shop.example');
    assert.equal(requesterText({ kind: 'mcp' }, {}, t), 'Asked by an outside agent through ferry mcp');
    assert.equal(requesterText({ kind: 'mcp', client: 'claude-code' }, {}, t), 'Asked by the outside agent claude-code through ferry mcp');
    assert.match(requesterText({ kind: 'socket' }, {}, t), /control socket/);
    assert.match(requesterText({ kind: 'cli' }, {}, t), /ferry call/);
    assert.match(requesterText({ kind: 'extension' }, {}, t), /extension/);
    assert.equal(requesterText({ kind: 'robot' }, {}, t), 'Asked by robot');
    // An older host says nothing: the card says nothing either.
    assert.equal(requesterText(undefined, {}, t), '');
    assert.equal(requesterText({}, {}, t), '');
  });

  it('say what goes where, in the person\'s words', () => {
    assert.equal(flowText({ sources: ['https://mail.example', 'workspace', 'other tabs', 'your message'], destination: 'https://evil.example' }, t),
      'Would carry data from https://mail.example, your workspace, your other tabs, your message to https://evil.example');
    assert.equal(flowText({ sources: [], destination: 'https://x.example' }, t), '');
    assert.equal(flowText(undefined, t), '');
    assert.equal(pageTitle({ title: '  Cart ' }), 'Cart');
    assert.equal(pageTitle(undefined), '');
  });

  it('are answered by a key only on the card, once the person moved there, and never for good', () => {
    const enter = { key: 'Enter', onCard: true };
    assert.equal(cardKey(enter, false), null, 'a card the person has not moved to');
    assert.equal(cardKey(enter, true), 'approve');
    assert.equal(cardKey({ key: ' ', onCard: true }, true), 'approve');
    assert.equal(cardKey({ key: 'Enter', onCard: false }, true), null, 'Enter on a button inside is the button\'s own');
    assert.equal(cardKey({ ...enter, repeat: true }, true), null, 'a key held down since before');
    assert.equal(cardKey({ ...enter, isComposing: true }, true), null, 'an IME composing text');
    assert.equal(cardKey({ key: 'Escape' }, false), 'deny');
    assert.equal(cardKey({ key: 'a', onCard: true }, true), null);
  });
});
