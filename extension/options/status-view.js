// What the options page shows for a host-client snapshot, kept apart from the
// DOM so it can be tested in Node. `t` is the i18n lookup (lib/i18n.js).

export const PINNED_EXTENSION_ID = 'hbkoapgnaiamicpgipblnghgmidgcmoc';

/** The value of #host-status[data-state]. */
export function displayState(snapshot) {
  switch (snapshot?.state) {
    case 'connected':
    case 'connecting':
    case 'incompatible':
      return snapshot.state;
  }
  const reason = snapshot?.lastError?.reason;
  if (!reason || reason === 'disconnected' || reason === 'closed') return 'disconnected';
  if (reason === 'not_installed' || reason === 'forbidden') return reason;
  return 'error';
}

export function statusLabel(shown, t) {
  switch (shown) {
    case 'connected': return t('statusConnected');
    case 'connecting': return t('statusConnecting');
    case 'not_installed': return t('statusNotInstalled');
    case 'forbidden': return t('statusForbidden');
    case 'incompatible': return t('statusIncompatible');
    case 'error': return t('statusError');
    default: return t('statusDisconnected');
  }
}

/** A copy of the extension loaded with another ID must be named to the installer. */
export function installCommand(extensionId) {
  return extensionId === PINNED_EXTENSION_ID ? 'ferry install' : `ferry install --extension-id ${extensionId}`;
}

const DOCTOR = 'ferry doctor';

/**
 * Steps to show under the status: [{text, command?, detail?}]. `command` is
 * something to paste into a terminal; `detail` is text from the host or the
 * browser, shown as is.
 */
export function helpSteps(snapshot, extensionId, t) {
  const shown = displayState(snapshot);
  const detail = snapshot?.lastError?.message;
  const custom = extensionId !== PINNED_EXTENSION_ID;
  switch (shown) {
    case 'not_installed':
      return [
        { text: custom ? t('helpNotInstalledCustomId') : t('helpNotInstalled'), command: installCommand(extensionId) },
        { text: t('helpDoctor'), command: DOCTOR },
      ];
    case 'forbidden':
      return [
        { text: t('helpForbidden'), command: DOCTOR },
        { text: t('helpForbiddenReinstall'), command: installCommand(extensionId) },
      ];
    case 'incompatible':
      return [{ text: t('helpIncompatible'), detail }];
    case 'error':
      return [
        { text: errorText(snapshot.lastError.reason, t), detail },
        { text: t('helpDoctor'), command: DOCTOR },
      ];
    case 'disconnected':
      return detail ? [{ text: t('errorDisconnected'), detail }] : [];
    default:
      return [];
  }
}

function errorText(reason, t) {
  switch (reason) {
    case 'exited': return t('errorExited');
    case 'protocol_error': return t('errorProtocol');
    case 'hello_timeout':
    case 'hello_failed': return t('errorHandshake');
    default: return t('errorOther');
  }
}

/** "12.3 MB" in the page's language. */
export function formatBytes(bytes, locale) {
  if (!Number.isFinite(bytes) || bytes < 0) return '';
  const units = ['byte', 'kilobyte', 'megabyte', 'gigabyte', 'terabyte'];
  let value = bytes;
  let i = 0;
  while (value >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  return new Intl.NumberFormat(locale, {
    style: 'unit',
    unit: units[i],
    unitDisplay: i === 0 ? 'long' : 'short',
    maximumFractionDigits: i === 0 ? 0 : 1,
  }).format(value);
}
