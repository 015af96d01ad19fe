import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  auditDurationMs, auditParams, exportFileName, localToRFC3339, providerFormValues, providerProblems, providerSaveParams,
} from '../options/settings-logic.js';

describe('provider form', () => {
  const base = { id: 'fake', kind: 'openai', baseUrl: ' http://127.0.0.1:9/v1 ', model: 'm', contextWindow: '', apiKeyEnv: '', default: false };

  it('sends no key when the field is empty, so the stored key stays', () => {
    const p = providerSaveParams({ ...base, key: '' });
    assert.deepEqual(p, { id: 'fake', kind: 'openai', base_url: 'http://127.0.0.1:9/v1', model: 'm' });
    assert.deepEqual(providerProblems(p), []);
  });

  it('sends a typed key once, or clear_key', () => {
    assert.equal(providerSaveParams({ ...base, key: 'sk-1' }).key, 'sk-1');
    const cleared = providerSaveParams({ ...base, key: 'sk-1', clearKey: true, default: true, contextWindow: '32000', apiKeyEnv: 'K' });
    assert.equal(cleared.key, undefined);
    assert.equal(cleared.clear_key, true);
    assert.equal(cleared.default, true);
    assert.equal(cleared.context_window, 32000);
    assert.equal(cleared.api_key_env, 'K');
  });

  it('names what is missing', () => {
    assert.deepEqual(providerProblems(providerSaveParams({ id: '', kind: 'x', baseUrl: 'ftp://a', model: '' })), ['id', 'kind', 'base_url', 'model']);
  });

  it('edits a listed provider without any key', () => {
    const v = providerFormValues({ id: 'a', kind: 'anthropic', base_url: 'https://x', model: 'm', context_window: 200000, key_set: true, default: true });
    assert.equal(v.key, '');
    assert.equal(v.contextWindow, '200000');
    assert.equal(v.default, true);
  });
});

describe('audit filter', () => {
  it('leaves out empty fields and converts local times to RFC 3339', () => {
    assert.deepEqual(auditParams({ tool: ' ', code: '', origin: '', caller: ' ', limit: '' }), {});
    const p = auditParams({ since: '2026-01-02T03:04', tool: 'click', code: 'USER_REJECTED', origin: 'https://a.example', caller: ' mcp ', limit: '50' });
    assert.equal(p.since, new Date('2026-01-02T03:04').toISOString());
    assert.equal(p.limit, 50);
    assert.equal(p.tool, 'click');
    assert.equal(p.caller, 'mcp');
    assert.equal(localToRFC3339('nonsense'), '');
  });

  it('names exports and converts durations', () => {
    assert.equal(exportFileName(new Date('2026-01-02T03:04:05.678Z')), 'ferry-audit-2026-01-02T03-04-05-678Z.jsonl');
    assert.equal(auditDurationMs({ duration_ns: 12_500_000 }), 13);
  });
});
