// Pure helpers of the options page's provider and audit sections: form values
// → protocol params, rows → what is shown. No DOM; tested with node --test.

export const PROVIDER_KINDS = ['openai', 'anthropic'];

/**
 * providers.save params from the form. The key is write-only: an empty field
 * keeps the stored key (no `key` sent); `clearKey` removes it.
 */
export function providerSaveParams(form) {
  const p = {
    id: String(form.id ?? '').trim(),
    kind: String(form.kind ?? '').trim(),
    base_url: String(form.baseUrl ?? '').trim(),
    model: String(form.model ?? '').trim(),
  };
  const window = Number.parseInt(form.contextWindow, 10);
  if (Number.isInteger(window) && window > 0) p.context_window = window;
  const env = String(form.apiKeyEnv ?? '').trim();
  if (env) p.api_key_env = env;
  if (form.default) p.default = true;
  if (form.clearKey) p.clear_key = true;
  else if (typeof form.key === 'string' && form.key !== '') p.key = form.key;
  return p;
}

/** What is missing before a save is worth sending: a list of field names. */
export function providerProblems(params) {
  const missing = [];
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(params.id)) missing.push('id');
  if (!PROVIDER_KINDS.includes(params.kind)) missing.push('kind');
  if (!/^https?:\/\/\S+$/.test(params.base_url)) missing.push('base_url');
  if (!params.model) missing.push('model');
  return missing;
}

/** The form's values for editing a listed provider (never a key: the host has none to give). */
export function providerFormValues(view) {
  return {
    id: view?.id ?? '', kind: view?.kind ?? 'openai', baseUrl: view?.base_url ?? '', model: view?.model ?? '',
    contextWindow: view?.context_window ? String(view.context_window) : '', apiKeyEnv: view?.api_key_env ?? '',
    default: Boolean(view?.default), key: '', clearKey: false,
  };
}

/** A datetime-local value ("2026-01-02T03:04") in local time → RFC 3339 UTC, or '' . */
export function localToRFC3339(value) {
  if (!value) return '';
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

/** audit.query / audit.export params from the filter form; empty fields are left out. */
export function auditParams(form) {
  const p = {};
  const since = localToRFC3339(form.since);
  const until = localToRFC3339(form.until);
  if (since) p.since = since;
  if (until) p.until = until;
  for (const key of ['tool', 'code', 'origin', 'caller']) {
    const v = String(form[key] ?? '').trim();
    if (v) p[key] = v;
  }
  const limit = Number.parseInt(form.limit, 10);
  if (Number.isInteger(limit) && limit > 0) p.limit = limit;
  return p;
}

/** A file name for an export made at `date`. */
export function exportFileName(date) {
  return `ferry-audit-${date.toISOString().replace(/[:.]/g, '-')}.jsonl`;
}

/** Milliseconds of an audit row's duration (stored in nanoseconds). */
export function auditDurationMs(entry) {
  const ns = Number(entry?.duration_ns);
  return Number.isFinite(ns) ? Math.round(ns / 1e6) : 0;
}
