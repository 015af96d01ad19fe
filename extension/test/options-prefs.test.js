import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { defaultText, displayValue, isChange, refusalText, settingValue, splitList } from '../options/prefs-logic.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

describe('settings controls', () => {
  it('shows comma-separated lists one entry per line and saves them back', () => {
    assert.equal(displayValue('list', 'https://a.example, https://b.example'), 'https://a.example\nhttps://b.example');
    assert.equal(settingValue('list', ' https://a.example \n\nhttps://b.example,https://c.example '), 'https://a.example,https://b.example,https://c.example');
    assert.equal(settingValue('list', ' \n '), null);
    assert.deepEqual(splitList(''), []);
  });

  it('maps checkboxes to "true"/"false"', () => {
    assert.equal(displayValue('bool', 'true'), true);
    assert.equal(displayValue('bool', 'false'), false);
    assert.equal(settingValue('bool', true), 'true');
    assert.equal(settingValue('bool', false), 'false');
  });

  it('sends null (the default) for an empty field; keeps free text as typed', () => {
    assert.equal(settingValue('number', ' '), null);
    assert.equal(settingValue('number', ' 12 '), '12');
    assert.equal(settingValue('line', ''), null);
    assert.equal(settingValue('text', '  Be brief.\n'), '  Be brief.\n');
    assert.equal(settingValue('text', ''), null);
  });

  it('saves only what changed', () => {
    const unset = { value: '30', default: '30', set: false };
    assert.equal(isChange(unset, '30'), false);
    assert.equal(isChange(unset, null), false);
    assert.equal(isChange(unset, '5'), true);
    const set = { value: '5', default: '30', set: true };
    assert.equal(isChange(set, '5'), false);
    assert.equal(isChange(set, null), true);
    assert.equal(isChange(set, '30'), true);
    assert.equal(isChange(undefined, '1'), false);
  });

  it('shows the host refusal without protocol prefixes', () => {
    assert.equal(refusalText('invalid params: tools.confirm_timeout_seconds: want an integer from 1 to 3600', 'tools.confirm_timeout_seconds'),
      'want an integer from 1 to 3600');
    assert.equal(refusalText('the host is gone', 'x'), 'the host is gone');
  });

  it('names defaults worth showing', () => {
    assert.equal(defaultText('bool', 'false'), '');
    assert.equal(defaultText('text', ''), '');
    assert.equal(defaultText('number', '30'), '30');
    assert.equal(defaultText('list', 'a,b'), 'a, b');
  });
});

describe('options page sections', () => {
  const html = readFileSync(join(root, 'options', 'options.html'), 'utf8');
  const keys = [...html.matchAll(/data-setting="([^"]+)"/g)].map((m) => m[1]);
  const secrets = [...html.matchAll(/data-secret="([^"]+)"/g)].map((m) => m[1]);

  it('covers the settings issue 7 asks for, each once', () => {
    const want = [
      'agent.system_prompt', 'agent.max_tool_calls', 'agent.max_tokens_per_run', 'agent.subagent_concurrency',
      'search.engine', 'search.duckduckgo.endpoint', 'search.bing.endpoint', 'search.baidu.endpoint', 'search.google.endpoint', 'search.google.cx',
      'fetch.allow_private_hosts', 'browser.scripts_auto_approve_origins', 'tools.denied_origins', 'browser.allow_navigate', 'browser.allow_private_hosts',
      'tools.confirm', 'tools.confirm_writes', 'tools.confirm_timeout_seconds', 'tools.ask_timeout_seconds', 'tools.disabled',
      'audit.retention_days', 'diagnostics.retention_days',
    ];
    assert.deepEqual([...keys].sort(), [...want].sort());
    assert.deepEqual(secrets.sort(), ['search.bing.key', 'search.google.key']);
  });

  it('gives every control a type prefs.js knows and an error line', () => {
    for (const m of html.matchAll(/<(?:input|select|textarea)\b[^>]*data-setting="[^"]+"[^>]*>/g)) {
      assert.match(m[0], /data-type="(text|line|list|number|bool)"/, m[0]);
      const id = m[0].match(/\bid="([^"]+)"/)[1];
      assert.match(html, new RegExp(`id="${id}-error"`), id);
    }
    for (const m of html.matchAll(/<input\b[^>]*data-secret="[^"]+"[^>]*>/g)) {
      assert.match(m[0], /type="password"/);
      assert.match(m[0], /autocomplete="new-password"/);
    }
  });
});

import { askChoiceChanges, withOrigin } from '../options/prefs-logic.js';

describe('page origins', () => {
  it('puts an origin in or takes it out of a list', () => {
    assert.equal(withOrigin('https://a.example,https://b.example', 'https://c.example', true), 'https://a.example,https://b.example,https://c.example');
    assert.equal(withOrigin('https://a.example, https://b.example', 'https://a.example', false), 'https://b.example');
    assert.equal(withOrigin('https://a.example', 'https://a.example', false), null);
    assert.equal(withOrigin('https://a.example', 'https://a.example', true), 'https://a.example');
  });
  it('keeps an origin in at most one of allowed and denied', () => {
    assert.deepEqual(askChoiceChanges('https://a.example', '', 'https://a.example', 'denied'), [
      { key: 'pages.ask_allowed_origins', value: null }, { key: 'pages.ask_denied_origins', value: 'https://a.example' }]);
    assert.deepEqual(askChoiceChanges('', 'https://a.example', 'https://a.example', 'ask'), [
      { key: 'pages.ask_allowed_origins', value: null }, { key: 'pages.ask_denied_origins', value: null }]);
  });
});
