// Pure helpers of the options page's settings sections (prefs.js): how a
// setting's stored string is shown in its control and how the control's value
// goes back to settings.set. No DOM; tested with node --test.
//
// Types (the data-type attribute of a control):
//   text    free text, kept as typed (the system prompt)
//   line    one trimmed line (endpoints, IDs, the search engine)
//   list    comma-separated on the host, one entry per line in the page
//   number  an integer as text
//   bool    "true" / "false" behind a checkbox
// An empty control means "back to the default" (settings.set value null).

/** The control's value for a stored setting value. */
export function displayValue(type, value) {
  const v = value ?? '';
  switch (type) {
    case 'list': return splitList(v).join('\n');
    case 'bool': return v === 'true';
    default: return v;
  }
}

export function splitList(v) {
  return String(v ?? '').split(/[,\n]/).map((s) => s.trim()).filter(Boolean);
}

/** settings.set's value for what the control holds: a string, or null for the default. */
export function settingValue(type, raw) {
  switch (type) {
    case 'bool': return raw ? 'true' : 'false';
    case 'list': {
      const items = splitList(raw);
      return items.length ? items.join(',') : null;
    }
    case 'text': return String(raw ?? '') === '' ? null : String(raw);
    default: {
      const v = String(raw ?? '').trim();
      return v === '' ? null : v;
    }
  }
}

/**
 * Whether sending `next` (settingValue's result) would change the setting
 * `current` ({value, default, set} from settings.list).
 */
export function isChange(current, next) {
  if (!current) return false;
  if (next === null) return Boolean(current.set);
  // Unset, the host already answers with the default: typing it changes nothing.
  return current.set ? current.value !== next : current.default !== next;
}

/**
 * The host's refusal without the protocol's prefixes: settings.set answers
 * "invalid params: KEY: why"; only "why" is worth showing under the field.
 */
export function refusalText(message, key) {
  let m = String(message ?? '').trim();
  m = m.replace(/^invalid params:\s*/i, '');
  if (key && m.startsWith(`${key}:`)) m = m.slice(key.length + 1).trim();
  return m;
}

/** A default worth showing under a field ('' for none or for a checkbox). */
export function defaultText(type, def) {
  if (type === 'bool' || def === undefined || def === null || def === '') return '';
  return type === 'list' ? splitList(def).join(', ') : String(def);
}

/**
 * The Page origins section: a comma-separated origin list with origin put in
 * (on) or taken out (off), for settings.set (null when the list ends up empty).
 */
export function withOrigin(listValue, origin, on) {
  const items = splitList(listValue).filter((o) => o !== origin);
  if (on) items.push(origin);
  return items.length ? items.join(',') : null;
}

/** The settings.set calls that make origin's "may start runs" choice (allowed, denied, ask). */
export function askChoiceChanges(allowedValue, deniedValue, origin, choice) {
  return [
    { key: 'pages.ask_allowed_origins', value: withOrigin(allowedValue, origin, choice === 'allowed') },
    { key: 'pages.ask_denied_origins', value: withOrigin(deniedValue, origin, choice === 'denied') },
  ];
}
