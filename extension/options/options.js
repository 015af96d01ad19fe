// Options page: host status for now. Host and browser text is only ever
// placed with textContent.

import { connectRuntime, runtimeId, sendRuntimeMessage } from '../lib/chrome-api.js';
import { byId as $, stepNodes } from '../lib/dom.js';
import { hostRequest } from '../lib/host-request.js';
import { STATUS_PORT } from '../lib/wire.js';
import { localize, t } from '../lib/i18n.js';
import { displayState, formatBytes, helpSteps, statusLabel } from './status-view.js';
import { initSettings, onHostConnected } from './settings.js';
import { initPrefs, loadPrefs } from './prefs.js';
import { initWorkspace, loadWorkspace } from './workspace.js';

// Bumped whenever the connection changes, so a late host.info answer for an
// earlier connection cannot overwrite what is shown now.
let infoGeneration = 0;
let shownConnection = false;

function render(snapshot) {
  const shown = displayState(snapshot);
  const status = $('host-status');
  status.dataset.state = shown;
  $('host-status-text').textContent = statusLabel(shown, t);
  renderHelp(helpSteps(snapshot, runtimeId(), t));

  const retry = $('host-retry');
  retry.hidden = shown === 'connected';
  retry.disabled = shown === 'connecting';

  if (shown === 'connected') {
    if (!shownConnection) {
      shownConnection = true;
      showDetails(snapshot.hostInfo);
      onHostConnected();
      loadPrefs();
      loadWorkspace();
    }
  } else {
    shownConnection = false;
    infoGeneration++;
    $('host-details').hidden = true;
  }
}

function showDetails(hello) {
  const generation = ++infoGeneration;
  $('host-version').textContent = hello?.version ?? '';
  $('host-protocol').textContent = String(hello?.protocol ?? '');
  $('host-data-dir').textContent = '…';
  $('host-database').textContent = '…';
  $('host-details').hidden = false;
  hostRequest('host.info').then(
    (info) => {
      if (generation !== infoGeneration) return;
      $('host-version').textContent = info.version ?? '';
      $('host-protocol').textContent = String(info.protocol ?? '');
      $('host-data-dir').textContent = info.data_dir ?? '';
      $('host-database').textContent = t('databaseValue', [
        info.database_path ?? '',
        formatBytes(info.database_bytes, t('htmlLang')),
      ]);
    },
    (err) => {
      if (generation !== infoGeneration) return;
      const text = t('infoLoadFailed', [err.message]);
      $('host-data-dir').textContent = text;
      $('host-database').textContent = '';
    },
  );
}

function renderHelp(steps) {
  const help = $('host-help');
  const parts = stepNodes(steps);
  help.replaceChildren(...parts);
  help.hidden = parts.length === 0;
}

function watchStatus() {
  const port = connectRuntime(STATUS_PORT);
  port.onMessage(render);
  // The service worker was stopped or restarted; a new port wakes it and it
  // pushes its current state straight away.
  port.onDisconnect(() => setTimeout(watchStatus, 1000));
}

localize(document);
$('extension-id').textContent = runtimeId();
$('host-retry').addEventListener('click', () => {
  sendRuntimeMessage({ type: 'host.retry' }).catch((err) => console.error('ferry: retry failed', err));
});
initSettings();
initPrefs();
initWorkspace();
watchStatus();
