// The options page's provider and audit sections. Host data is placed with
// textContent only. The API key field is write-only: it is sent once with
// providers.save and cleared; the host never returns a key, only key_set.

import { byId as $, button as makeButton, el } from '../lib/dom.js';
import { hostRequest } from '../lib/host-request.js';
import { t } from '../lib/i18n.js';
import {
  auditDurationMs, auditParams, exportFileName, providerFormValues, providerProblems, providerSaveParams,
} from './settings-logic.js';

const button = (text, onClick, className) => makeButton(text, onClick, { className });

// ---------------------------------------------------------------- providers

let providers = [];

async function loadProviders() {
  try {
    const got = await hostRequest('providers.list');
    providers = got.providers ?? [];
    renderProviders();
  } catch (err) {
    $('provider-test-result').textContent = t('providersLoadFailed', [err.message]);
  }
}

function keyText(p) {
  if (!p.key_set) return t('keyNotSet');
  return p.key_source === 'env' || p.api_key_env ? t('keySetFromEnv', [p.api_key_env ?? '']) : t('keySet');
}

function renderProviders() {
  $('providers-empty').hidden = providers.length > 0;
  $('provider-table').hidden = providers.length === 0;
  $('provider-rows').replaceChildren(...providers.map((p) => {
    const tr = document.createElement('tr');
    const id = el('td');
    id.append(el('strong', { text: p.id }));
    if (p.default) id.append(' ', el('span', { text: t('defaultBadge'), className: 'badge' }));
    const model = el('td');
    model.append(el('div', { text: `${p.kind} · ${p.model}` }), el('div', { text: p.base_url, className: 'hint path' }));
    const actions = el('td');
    actions.append(
      button(t('providerEditButton'), () => editProvider(p)),
      button(t('providerTestButton'), (e) => testProvider(p, e.target)),
      ...(p.default ? [] : [button(t('providerMakeDefaultButton'), () => makeDefault(p))]),
      button(t('providerRemoveButton'), () => removeProvider(p), 'quiet small danger-text'),
    );
    tr.append(id, model, el('td', { text: keyText(p) }), actions);
    return tr;
  }));
}

function fillForm(values, editing) {
  $('pf-id').value = values.id;
  $('pf-id').readOnly = Boolean(editing);
  $('pf-kind').value = values.kind;
  $('pf-base-url').value = values.baseUrl;
  $('pf-model').value = values.model;
  $('pf-context').value = values.contextWindow;
  $('pf-key-env').value = values.apiKeyEnv;
  $('pf-key').value = '';
  $('pf-clear-key').checked = false;
  $('pf-default').checked = values.default;
  $('pf-key-state').textContent = editing ? `${keyText(editing)} ${t('keyWriteOnlyHint')}` : t('keyWriteOnlyHint');
  $('provider-form-title').textContent = editing ? t('providerEditTitle', [values.id]) : t('providerAddTitle');
  $('provider-form-error').textContent = '';
}

function editProvider(p) {
  fillForm(providerFormValues(p), p);
  $('pf-base-url').focus();
}

async function saveProvider(e) {
  e.preventDefault();
  const params = providerSaveParams({
    id: $('pf-id').value, kind: $('pf-kind').value, baseUrl: $('pf-base-url').value, model: $('pf-model').value,
    contextWindow: $('pf-context').value, apiKeyEnv: $('pf-key-env').value, default: $('pf-default').checked,
    key: $('pf-key').value, clearKey: $('pf-clear-key').checked,
  });
  // The key leaves the field whatever happens next: it is never kept in the page.
  $('pf-key').value = '';
  const missing = providerProblems(params);
  if (missing.length) {
    $('provider-form-error').textContent = t('providerMissingFields', [missing.join(', ')]);
    return;
  }
  try {
    const got = await hostRequest('providers.save', params);
    fillForm(providerFormValues(got.provider), got.provider);
    $('provider-test-result').textContent = t('providerSaved', [got.provider.id]);
    await loadProviders();
  } catch (err) {
    $('provider-form-error').textContent = t('providerSaveFailed', [err.message]);
  }
}

async function testProvider(p, b) {
  const out = $('provider-test-result');
  out.textContent = t('providerTesting', [p.id]);
  b.disabled = true;
  try {
    const r = await hostRequest('providers.test', { id: p.id }, 120_000);
    out.textContent = r.ok
      ? t('providerTestOk', [p.id, String(r.latency_ms ?? 0), r.reply ?? ''])
      : t('providerTestFailed', [p.id, [r.error, r.fix].filter(Boolean).join(' ')]);
  } catch (err) {
    out.textContent = t('providerTestFailed', [p.id, err.message]);
  } finally {
    b.disabled = false;
  }
}

async function makeDefault(p) {
  try {
    await hostRequest('providers.set_default', { id: p.id });
    await loadProviders();
  } catch (err) {
    $('provider-test-result').textContent = t('providerSaveFailed', [err.message]);
  }
}

async function removeProvider(p) {
  if (!globalThis.confirm(t('providerRemoveConfirm', [p.id]))) return;
  try {
    await hostRequest('providers.remove', { id: p.id });
    await loadProviders();
  } catch (err) {
    $('provider-test-result').textContent = t('providerSaveFailed', [err.message]);
  }
}

// ---------------------------------------------------------------- audit

function auditForm() {
  return {
    since: $('af-since').value, until: $('af-until').value, tool: $('af-tool').value,
    origin: $('af-origin').value, code: $('af-code').value, caller: $('af-caller').value,
    limit: $('af-limit').value,
  };
}

async function searchAudit(e) {
  e?.preventDefault();
  const status = $('audit-status');
  status.textContent = t('auditLoading');
  try {
    const got = await hostRequest('audit.query', auditParams(auditForm()));
    const entries = got.entries ?? [];
    status.textContent = t('auditCount', [String(entries.length)]);
    $('audit-table').hidden = entries.length === 0;
    $('audit-detail').hidden = true;
    $('audit-rows').replaceChildren(...entries.map((row) => {
      const tr = document.createElement('tr');
      tr.tabIndex = 0;
      tr.className = row.success ? '' : 'failed';
      const when = new Date(row.time);
      tr.append(
        el('td', { text: Number.isNaN(when.getTime()) ? String(row.time ?? '') : when.toLocaleString(t('htmlLang')) }),
        el('td', { text: row.caller ?? '' }), el('td', { text: row.tool ?? '' }), el('td', { text: row.origin ?? '' }),
        el('td', { text: row.code || (row.success ? 'OK' : '') }),
        el('td', { text: String(auditDurationMs(row)) }),
      );
      const show = () => {
        const detail = $('audit-detail');
        detail.textContent = JSON.stringify(row, null, 2);
        detail.hidden = false;
      };
      tr.addEventListener('click', show);
      tr.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter' || ev.key === ' ') {
          ev.preventDefault();
          show();
        }
      });
      return tr;
    }));
  } catch (err) {
    status.textContent = t('auditFailed', [err.message]);
  }
}

async function exportAudit() {
  const status = $('audit-status');
  try {
    const params = auditParams(auditForm());
    delete params.limit;
    const got = await hostRequest('audit.export', params, 120_000);
    const blob = new Blob([got.jsonl ?? ''], { type: 'application/x-ndjson' });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = exportFileName(new Date());
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    status.textContent = t('auditExported', [String(got.count ?? 0)]);
  } catch (err) {
    status.textContent = t('auditFailed', [err.message]);
  }
}

// ---------------------------------------------------------------- wiring

let started = false;

/** Called by options.js whenever the host connection is (re)established. */
export function onHostConnected() {
  loadProviders();
  if (!started) {
    started = true;
    searchAudit();
  }
}

export function initSettings() {
  fillForm(providerFormValues(null), null);
  $('provider-form').addEventListener('submit', saveProvider);
  $('provider-form-reset').addEventListener('click', () => fillForm(providerFormValues(null), null));
  $('audit-form').addEventListener('submit', searchAudit);
  $('audit-export').addEventListener('click', exportAudit);
}
