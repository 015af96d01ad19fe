// The options page's settings sections: every control marked data-setting="KEY"
// shows that setting from settings.list and saves through settings.set; every
// data-secret="KEY" field is write-only (secrets.set) and shows only whether a
// key is set. The host checks each value; its refusal is shown under the field.
// Host text is placed with textContent only.

import { hostRequest } from '../lib/host-request.js';
import { t } from '../lib/i18n.js';
import { askChoiceChanges, defaultText, displayValue, isChange, refusalText, settingValue, splitList, withOrigin } from './prefs-logic.js';

/** key → {key, value, default, description, set}, as last read from the host. */
let settings = new Map();
let secretsSet = new Set();

const forms = () => [...document.querySelectorAll('form.prefs')];
const controls = (root = document) => [...root.querySelectorAll('[data-setting]')];
const secretInputs = (root = document) => [...root.querySelectorAll('[data-secret]')];
const errorFor = (control) => document.getElementById(`${control.id}-error`);

function setError(control, text) {
  const out = errorFor(control);
  if (out) out.textContent = text;
  if (text) control.setAttribute('aria-invalid', 'true');
  else control.removeAttribute('aria-invalid');
}

function showControl(control) {
  const s = settings.get(control.dataset.setting);
  const field = control.closest('.field');
  // A key this host does not know (an older host): no control for it.
  if (field) field.hidden = !s;
  if (!s) return;
  const type = control.dataset.type;
  const value = displayValue(type, s.value);
  if (type === 'bool') control.checked = value;
  else control.value = value;
  control.title = s.description ?? '';
  let note = field?.querySelector('.default-note');
  const def = defaultText(type, s.default);
  if (def && field) {
    if (!note) {
      note = document.createElement('p');
      note.className = 'hint default-note';
      errorFor(control)?.before(note);
    }
    note.textContent = t('prefDefaultValue', [def]);
  } else note?.remove();
}

function showSecret(input) {
  const key = input.dataset.secret;
  const set = secretsSet.has(key);
  input.value = '';
  document.getElementById(`${input.id}-state`).textContent = set ? t('keySet') : t('keyNotSet');
  const remove = input.parentElement.querySelector('[data-remove-secret]');
  if (remove) remove.hidden = !set;
}

function rawValue(control) {
  return control.dataset.type === 'bool' ? control.checked : control.value;
}

export async function loadPrefs() {
  try {
    const got = await hostRequest('settings.list');
    settings = new Map((got.settings ?? []).map((s) => [s.key, s]));
    secretsSet = new Set(got.secrets_set ?? []);
    for (const c of controls()) {
      showControl(c);
      setError(c, '');
    }
    for (const s of secretInputs()) showSecret(s);
    for (const f of forms()) f.querySelector('.prefs-status').textContent = '';
  } catch (err) {
    for (const f of forms()) f.querySelector('.prefs-status').textContent = t('prefLoadFailed', [err.message]);
  }
  await loadPageOrigins();
}

// ---- Page origins: the origins that declared actions (host page.origins), each
// with its page API switch (pages.disabled_origins), whether it may start runs
// (pages.ask_allowed_origins / pages.ask_denied_origins) and whether its page
// scripts are auto-approved (browser.scripts_auto_approve_origins). Each change
// is saved at once.

const AUTO_APPROVE = 'browser.scripts_auto_approve_origins';

async function setSettings(changes) {
  for (const { key, value } of changes) {
    const current = settings.get(key);
    if (current && !isChange(current, value)) continue;
    const got = await hostRequest('settings.set', { key, value });
    settings.set(key, { ...(current ?? { key }), value: got.value, set: got.set });
    for (const c of controls()) if (c.dataset.setting === key) showControl(c);
  }
}

function originRow(o) {
  const id = (s) => `po-${s}-${o.origin.replace(/[^a-z0-9]/gi, '_')}`;
  const tr = document.createElement('tr');
  const name = document.createElement('td');
  const strong = document.createElement('strong');
  strong.textContent = o.origin;
  const counts = document.createElement('span');
  counts.className = 'hint';
  counts.textContent = ` ${t('pageOriginsCounts', [String(o.tabs), String(o.actions)])}`;
  name.append(strong, counts);

  const api = document.createElement('input');
  api.type = 'checkbox';
  api.id = id('api');
  api.checked = !o.disabled;
  api.setAttribute('aria-label', `${t('pageOriginsApi')}: ${o.origin}`);
  api.addEventListener('change', () => saveOrigin([
    { key: 'pages.disabled_origins', value: withOrigin(settings.get('pages.disabled_origins')?.value, o.origin, !api.checked) },
  ]));

  const runs = document.createElement('select');
  runs.id = id('runs');
  runs.setAttribute('aria-label', `${t('pageOriginsRuns')}: ${o.origin}`);
  for (const [value, label] of [['ask', t('pageOriginsRunsAsk')], ['allowed', t('pageOriginsRunsAllowed')], ['denied', t('pageOriginsRunsDenied')]]) {
    const opt = document.createElement('option');
    opt.value = value;
    opt.textContent = label;
    runs.append(opt);
  }
  runs.value = o.ask ?? 'ask';
  runs.addEventListener('change', () => saveOrigin(askChoiceChanges(
    settings.get('pages.ask_allowed_origins')?.value, settings.get('pages.ask_denied_origins')?.value, o.origin, runs.value)));

  const auto = document.createElement('input');
  auto.type = 'checkbox';
  auto.id = id('auto');
  auto.checked = splitList(settings.get(AUTO_APPROVE)?.value).includes(o.origin);
  auto.setAttribute('aria-label', `${t('pageOriginsAutoApprove')}: ${o.origin}`);
  auto.addEventListener('change', () => saveOrigin([
    { key: AUTO_APPROVE, value: withOrigin(settings.get(AUTO_APPROVE)?.value, o.origin, auto.checked) },
  ]));

  const cells = [api, runs, auto].map((control) => {
    const td = document.createElement('td');
    td.append(control);
    return td;
  });
  tr.append(name, ...cells);
  tr.dataset.origin = o.origin;
  return tr;
}

async function saveOrigin(changes) {
  const status = document.getElementById('page-origins-status');
  try {
    await setSettings(changes);
    status.textContent = t('pageOriginsSaved');
  } catch (err) {
    status.textContent = t('pageOriginsFailed', [err.message]);
  }
  await loadPageOrigins(false);
}

export async function loadPageOrigins(clearStatus = true) {
  const list = document.getElementById('page-origins-list');
  if (!list) return;
  const status = document.getElementById('page-origins-status');
  if (clearStatus) status.textContent = '';
  try {
    const got = await hostRequest('page.origins', {});
    const origins = got.origins ?? [];
    list.replaceChildren(...origins.map(originRow));
    document.getElementById('page-origins-table').hidden = origins.length === 0;
    document.getElementById('page-origins-empty').hidden = origins.length > 0;
  } catch (err) {
    status.textContent = t('pageOriginsLoadFailed', [err.message]);
  }
}

async function save(e) {
  e.preventDefault();
  const form = e.currentTarget;
  const status = form.querySelector('.prefs-status');
  const button = form.querySelector('button[type="submit"]');
  button.disabled = true;
  status.textContent = '';
  let changed = 0;
  let failed = 0;
  try {
    for (const control of controls(form)) {
      const key = control.dataset.setting;
      const current = settings.get(key);
      if (!current) continue;
      const next = settingValue(control.dataset.type, rawValue(control));
      setError(control, '');
      if (!isChange(current, next)) continue;
      changed++;
      try {
        const got = await hostRequest('settings.set', { key, value: next });
        settings.set(key, { ...current, value: got.value, set: got.set });
        showControl(control);
      } catch (err) {
        failed++;
        setError(control, refusalText(err.message, key));
      }
    }
    for (const input of secretInputs(form)) {
      const value = input.value;
      // The key leaves the page's field whatever happens next.
      input.value = '';
      if (value === '') continue;
      changed++;
      try {
        const got = await hostRequest('secrets.set', { key: input.dataset.secret, value });
        if (got.set) secretsSet.add(input.dataset.secret);
        showSecret(input);
        setError(input, '');
      } catch (err) {
        failed++;
        setError(input, refusalText(err.message, input.dataset.secret));
      }
    }
  } finally {
    button.disabled = false;
  }
  status.textContent = failed ? t('prefSaveFailed') : changed ? t('prefSaved') : t('prefNothingChanged');
  if (failed) form.querySelector('[aria-invalid="true"]')?.focus();
}

async function removeSecret(button) {
  const key = button.dataset.removeSecret;
  const input = document.querySelector(`[data-secret="${CSS.escape(key)}"]`);
  try {
    await hostRequest('secrets.set', { key, value: null });
    secretsSet.delete(key);
    showSecret(input);
    setError(input, '');
    input.focus();
  } catch (err) {
    setError(input, refusalText(err.message, key));
  }
}

export function initPrefs() {
  for (const f of forms()) f.addEventListener('submit', save);
  for (const b of document.querySelectorAll('[data-remove-secret]')) b.addEventListener('click', () => removeSecret(b));
  // Until the host answers, nothing can be shown or saved.
  for (const c of controls()) {
    const field = c.closest('.field');
    if (field) field.hidden = true;
  }
}
