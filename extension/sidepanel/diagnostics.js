// The diagnostics drawer: each model call of a run with the tools, messages
// and answer sent, copyable as JSON (runs.get).

import { byId as $, el } from '../lib/dom.js';
import { hostRequest } from '../lib/host-request.js';
import { t } from '../lib/i18n.js';
import { app, showError } from './app.js';
import { prettyJSON } from './state.js';
import { diagnosticsRun, toJSON } from './view-model.js';

let diagnosticsData = null;

/** Fills the run picker with the runs of the conversation shown, and loads the chosen one when the drawer is open. */
export function renderDiagnosticsRuns() {
  const { view } = app;
  const select = $('diagnostics-run');
  const runIds = Object.keys(view.runs);
  const previous = select.value;
  select.replaceChildren(...runIds.map((id, i) => el('option', { value: id, text: t('runOption', [String(i + 1), view.runs[id].status ?? '']) })));
  if (runIds.length === 0) {
    $('diagnostics-body').replaceChildren(el('p', { className: 'muted', text: t('diagnosticsEmpty') }));
    diagnosticsData = null;
    return;
  }
  select.value = runIds.includes(previous) ? previous : runIds.at(-1);
  if (!$('diagnostics').hidden) loadDiagnostics(select.value);
}

export async function loadDiagnostics(runId) {
  const body = $('diagnostics-body');
  body.replaceChildren(el('p', { className: 'muted', text: t('loading') }));
  try {
    diagnosticsData = diagnosticsRun(await hostRequest('runs.get', { run_id: runId }));
    drawDiagnostics(diagnosticsData);
  } catch (err) {
    diagnosticsData = null;
    body.replaceChildren(el('p', { className: 'error', text: t('diagnosticsFailed', [err.message]) }));
  }
}

/** Copies the whole run shown, when there is one. */
export function copyDiagnostics(button) {
  if (diagnosticsData) copy(diagnosticsData, button);
}

function copyButton(value) {
  const b = el('button', { type: 'button', className: 'quiet small', text: t('copyJsonButton') });
  b.addEventListener('click', () => copy(value, b));
  return b;
}

async function copy(value, button) {
  try {
    await navigator.clipboard.writeText(toJSON(value));
    button.textContent = t('copied');
    setTimeout(() => (button.textContent = t('copyJsonButton')), 1500);
  } catch (err) {
    showError(t('copyFailed', [err.message]));
  }
}

function jsonBlock(title, value) {
  return el('details', {}, el('summary', {}, el('span', { text: title }), ' ', copyButton(value)), el('pre', {}, el('code', { text: toJSON(value) })));
}

function drawDiagnostics(d) {
  const body = $('diagnostics-body');
  const head = el('p', { className: 'small' }, el('span', {
    text: t('diagnosticsTotals', [String(d.calls.length), String(d.totals.inputTokens), String(d.totals.outputTokens), String(d.totals.latencyMs)]),
  }));
  const calls = d.calls.map((c, i) => {
    const tools = el('ul', { className: 'tool-specs' }, ...c.tools.map((spec) =>
      el('li', {}, el('details', {},
        el('summary', {}, el('code', { text: spec.name ?? '' }), ' ', el('span', { className: 'muted small', text: spec.description ?? '' })),
        el('pre', {}, el('code', { text: prettyJSON(spec.parameters) }))))));
    const unavailable = el('ul', {}, ...c.unavailable.map((u) => el('li', {}, el('code', { text: u.name ?? '' }), ' ', el('span', { text: u.reason ?? '' }))));
    return el('details', { className: 'model-call', open: i === d.calls.length - 1 },
      el('summary', {}, el('span', {
        text: t('modelCallSummary', [String(i + 1), c.purpose, c.model, String(c.latencyMs), String(c.inputTokens), String(c.outputTokens)]),
      }), ' ', copyButton(c.raw)),
      c.error ? el('p', { className: 'error', text: c.error }) : null,
      el('h4', { text: t('toolsSentLabel', [String(c.tools.length)]) }), tools,
      el('h4', { text: t('unavailableLabel', [String(c.unavailable.length)]) }),
      c.unavailable.length ? unavailable : el('p', { className: 'muted small', text: t('noneLabel') }),
      c.system ? jsonBlock(t('systemPromptLabel'), c.system) : null,
      jsonBlock(t('requestMessagesLabel', [String(c.messages.length)]), c.messages),
      jsonBlock(t('responseLabel'), c.response),
      c.attempts.length > 1 ? jsonBlock(t('attemptsLabel', [String(c.attempts.length)]), c.attempts) : null);
  });
  body.replaceChildren(head, ...calls);
}
